package health

import (
	"fmt"
	"io"
	"time"

	"github.com/clockwatch/clockwatch/probe"
)

// Write prints the facts and the verdict for a person, in the spirit of
// `chronyc tracking` with a judgement at the top.
func Write(w io.Writer, f Facts, v Verdict) error { return write(w, f, v, false) }

// WriteVerbose is Write with the figures only a developer or a bug report
// needs (`clockwatch status --verbose`): the wall−boot gap.
func WriteVerbose(w io.Writer, f Facts, v Verdict) error { return write(w, f, v, true) }

func write(w io.Writer, f Facts, v Verdict, verbose bool) error {
	ew := &errWriter{w: w}
	ew.printf("Clock health   : %s\n", v.Level)
	for _, fd := range v.Findings {
		ew.printf("  %-8s     %s\n", fd.Level, fd.Reason)
	}
	if s := f.Clocks; s != nil {
		ew.printf("Wall clock     : %s\n", time.Unix(0, s.Real).UTC().Format(time.RFC3339Nano))
		if verbose {
			ew.printf("Wall−boot gap  : %s seconds (REALTIME − BOOTTIME: moves only when the wall clock is set; step detection watches it)\n", seconds(s.WallBootGap()))
		}
		ew.printf("Suspended      : %v\n", s.Suspended())
		if s.TAI != 0 {
			ew.printf("TAI−UTC        : %v\n", s.TAIOffset())
		}
		ew.printf("Read window    : %v\n", s.Uncertainty())
	}
	if k := f.Kernel; k != nil {
		sync := "yes"
		if !k.Synchronized() {
			sync = "no"
		}
		ew.printf("Kernel synced  : %s (%s, status 0x%04x)\n", sync, k.State, k.Status)
		ew.printf("Kernel offset  : %v\n", k.Offset)
		ew.printf("Kernel freq.   : %+.3f ppm (the kernel's frequency correction)\n", k.Frequency*1e6)
		ew.printf("Max error      : %v%s\n", k.MaxError, saturated(k))
		ew.printf("Est. error     : %v\n", k.EstError)
		ew.printf("Kernel TAI     : %v\n", k.TAI)
	}
	if c := f.Chrony; c != nil {
		tr := c.Tracking
		ew.printf("chronyd        : reference %s (%s), stratum %d, leap %s\n", tr.RefName, tr.Address, tr.Stratum, tr.Leap)
		ew.printf("System offset  : %+.9f seconds (positive: this clock is ahead)\n", tr.SystemOffset)
		ew.printf("Last offset    : %+.9f seconds\n", tr.LastOffset)
		ew.printf("RMS offset     : %.9f seconds\n", tr.RMSOffset)
		ew.printf("chronyd freq.  : %+.3f ppm (how fast this clock would run without chronyd; positive: fast)\n", tr.Frequency*1e6)
		ew.printf("Root delay     : %.9f seconds\n", tr.RootDelay)
		ew.printf("Root dispersion: %.9f seconds\n", tr.RootDispersion)
		ew.printf("Sources        : %d, %d selectable\n", len(c.Sources), c.SelectableSources())
	}
	for _, a := range f.ChronyAudit {
		ew.printf("chrony.conf    : %s\n", a.Text)
	}
	return ew.err
}

func saturated(k *probe.Timex) string {
	if k.MaxError >= probe.MaxErrorSaturated {
		return " (saturated)"
	}
	return ""
}

// errWriter keeps the first write error so the printing reads straight.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// seconds prints d as seconds with all nine decimals, exactly (a float64
// would lose the last digits of a gap of 1.8e9 seconds).
func seconds(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%d.%09d", sign, d/time.Second, d%time.Second)
}
