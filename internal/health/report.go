package health

import (
	"fmt"
	"io"
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
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
			ew.printf("TAI−UTC        : %v%s\n", s.TAIOffset(), taiDiffers(s, f.Kernel))
		}
		ew.printf("Read window    : %v\n", s.Uncertainty())
	}
	if k := f.Kernel; k != nil {
		sync := "yes (maxerror under 16 s)"
		if !k.Disciplined() {
			sync = "no (maxerror saturated)"
		}
		unsync := "clear"
		if k.Status&kernel.StatusUnsync != 0 {
			unsync = "set"
		}
		ew.printf("Kernel synced  : %s (%s, status 0x%04x, STA_UNSYNC %s)\n", sync, k.State, k.Status, unsync)
		ew.printf("Kernel offset  : %v\n", k.Offset)
		ew.printf("Kernel freq.   : %+.3f ppm (the kernel's frequency correction)\n", k.Frequency*1e6)
		ew.printf("Max error      : %v%s\n", k.MaxError, saturated(k))
		ew.printf("Est. error     : %v\n", k.EstError)
		if f.Clocks == nil || f.Clocks.TAI == 0 {
			// CLOCK_TAI unread: the kernel's tai field is the one figure.
			ew.printf("TAI−UTC        : %v (the kernel's TAI offset)\n", k.TAI)
		}
	}
	for _, l := range f.Lines {
		ew.printf("%s\n", l)
	}
	for _, n := range f.Notes {
		ew.printf("%-15s: %s\n", n.Label, n.Text)
	}
	return ew.err
}

// taiDiffers notes the kernel's TAI offset when it is not what CLOCK_TAI −
// CLOCK_REALTIME measured (a TAI offset set between the two reads): one line
// for the one figure otherwise.
func taiDiffers(s *kernel.Sample, k *kernel.Timex) string {
	if k == nil || s.TAIOffset().Round(time.Second) == k.TAI {
		return ""
	}
	return fmt.Sprintf(" (CLOCK_TAI − CLOCK_REALTIME; the kernel's TAI offset says %v)", k.TAI)
}

func saturated(k *kernel.Timex) string {
	if k.MaxError >= kernel.MaxErrorSaturated {
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
