package chrony

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// DefaultMaxSlewRate is chronyd's default and largest maxslewrate
// (83333.333 ppm) as a ratio.
const DefaultMaxSlewRate = 83333.333e-6

// maxIncludeDepth bounds include/confdir nesting, so that a file that
// includes itself ends the audit with an error.
const maxIncludeDepth = 10

// Audit is what chrony.conf (with the files it includes) says about how
// chronyd may change the clock.
type Audit struct {
	// Path is the audited chrony.conf.
	Path string
	// Files lists every file read, in the order chronyd reads them.
	Files []string
	// MakeStep is the effective makestep directive; nil when there is none
	// (chronyd then never steps the clock, except by -s or a leap second).
	MakeStep *MakeStep
	// MaxSlewRate is the largest slew rate chronyd uses, as a ratio.
	MaxSlewRate float64
	// MaxSlewRateSet reports whether maxslewrate is in the configuration.
	MaxSlewRateSet bool
	// LeapSecMode is chronyd's leapsecmode ("system" when not set).
	LeapSecMode string
	// RTCSync reports whether rtcsync is configured. Without it chronyd on
	// Linux never clears the kernel's STA_UNSYNC flag.
	RTCSync bool
}

// MakeStep is a makestep directive.
type MakeStep struct {
	// Threshold is the offset above which chronyd steps, in seconds.
	Threshold float64
	// Limit is how many clock updates after start may step; negative means
	// unlimited: chronyd may step at any time.
	Limit int
	// File and Line locate the directive.
	File string
	Line int
}

// RuntimeStep reports whether chronyd may step the clock at any time, not
// only in its first updates after start.
func (a *Audit) RuntimeStep() bool { return a.MakeStep != nil && a.MakeStep.Limit < 0 }

// Finding is one sentence of the audit for people.
type Finding struct {
	// Warning marks a setting that needs changing.
	Warning bool
	// Text is a full sentence that says what is configured and, for a
	// warning, what to change.
	Text string
}

// Findings returns the audit as sentences for `clockwatch status`: warnings
// first, each saying what to change.
func (a *Audit) Findings() []Finding {
	var f []Finding
	if m := a.MakeStep; m != nil && m.Limit < 0 {
		f = append(f, Finding{Warning: true, Text: fmt.Sprintf(
			"%s:%d has \"makestep %g %d\": chronyd may step the clock at any time when its offset exceeds %g s, which breaks leases, locks and timeouts that trust the wall clock. Change it to \"makestep %g 3\" so that chronyd steps only in its first three clock updates after it starts and slews afterwards.",
			m.File, m.Line, m.Threshold, m.Limit, m.Threshold, m.Threshold)})
	}
	if a.LeapSecMode == "system" || a.LeapSecMode == "step" {
		how := "the kernel steps the clock back by one second"
		if a.LeapSecMode == "step" {
			how = "chronyd steps the clock by one second"
		}
		// Not a warning: it is chrony's default, so a stock host could never
		// be OK, clockwatch reports the leap step and steps its subscribers
		// down, and a leap second due today is a warning of its own (the
		// kernel's STA_INS/STA_DEL, chronyd's leap status).
		f = append(f, Finding{Text: fmt.Sprintf(
			"leapsecmode is %q: at a leap second %s. To spread it over hours instead, set \"leapsecmode slew\" (or \"smoothtime 400 0.001 leaponly\" on servers) together with \"maxslewrate 1000\".",
			a.LeapSecMode, how)})
	}
	switch m := a.MakeStep; {
	case m == nil:
		f = append(f, Finding{Text: "There is no makestep directive: chronyd corrects every offset by slewing and never steps the clock after it starts."})
	case m.Limit >= 0:
		f = append(f, Finding{Text: fmt.Sprintf(
			"%s:%d has \"makestep %g %d\": chronyd may step the clock only in its first %d clock updates after it starts, and slews afterwards.",
			m.File, m.Line, m.Threshold, m.Limit, m.Limit)})
	}
	if !a.RTCSync {
		f = append(f, Finding{Text: "There is no rtcsync directive: chronyd leaves the kernel's STA_UNSYNC flag set while it disciplines the clock, so the kernel (adjtimex, clockwatch_kernel_synchronized, timedatectl's \"System clock synchronized\") says unsynchronised, and the real-time clock is not kept in step. clockwatch judges synchronisation by chronyd's own status and the kernel's maxerror, so this changes none of its verdicts; add \"rtcsync\" for tools that read the kernel's flag."})
	}
	f = append(f, Finding{Text: fmt.Sprintf(
		"chronyd slews the clock by at most %.6g s per second (maxslewrate %.6g ppm): correcting a 1 s offset takes at least %.0f s.",
		a.MaxSlewRate, a.MaxSlewRate*1e6, 1/a.MaxSlewRate)})
	return f
}

// AuditFile audits the chrony.conf at path and every file it includes. A
// relative path is taken from the working directory, as chronyd would.
func AuditFile(p string) (*Audit, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("auditing chrony configuration %s: %w", p, err)
	}
	// chrony.conf and what it includes through safefile: no FIFO, device or
	// file over 1 MiB (chronyd's own is a few KiB); links are followed, as
	// chronyd follows them.
	return AuditFS(safefile.ReadFS{Spec: safefile.Spec{What: "chrony configuration file", Limit: 1 << 20, Links: safefile.AnyLinks}}, abs)
}

// AuditFS audits the chrony.conf at the absolute path p inside fsys, which
// stands for the root directory (tests use an in-memory file system).
func AuditFS(fsys fs.FS, p string) (*Audit, error) {
	a := &Audit{Path: p, MaxSlewRate: DefaultMaxSlewRate, LeapSecMode: "system"}
	if err := a.readFile(fsys, p, 0); err != nil {
		return nil, err
	}
	return a, nil
}

// fsPath turns an absolute path into an fs.FS path.
func fsPath(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (a *Audit) readFile(fsys fs.FS, p string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("reading %s: includes nested more than %d deep (does a file include itself?)", p, maxIncludeDepth)
	}
	b, err := fs.ReadFile(fsys, fsPath(p))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("reading chrony configuration %s: %w (make it readable for clockwatch, or set chrony.conf_path to \"\" to turn the audit off)", p, err)
		}
		return fmt.Errorf("reading chrony configuration %s: %w (set chrony.conf_path to its location, or to \"\" to turn the audit off)", p, err)
	}
	a.Files = append(a.Files, p)
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.ContainsAny(fields[0][:1], "!;#%") {
			continue
		}
		args := fields[1:]
		switch strings.ToLower(fields[0]) {
		case "makestep":
			if len(args) != 2 {
				return fmt.Errorf("%s:%d: makestep needs a threshold and a limit, got %q", p, line, strings.Join(args, " "))
			}
			th, err1 := strconv.ParseFloat(args[0], 64)
			lim, err2 := strconv.Atoi(args[1])
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("%s:%d: bad makestep %q: %w", p, line, strings.Join(args, " "), err)
			}
			a.MakeStep = &MakeStep{Threshold: th, Limit: lim, File: p, Line: line}
		case "maxslewrate":
			if len(args) != 1 {
				return fmt.Errorf("%s:%d: maxslewrate needs one rate in ppm", p, line)
			}
			r, err := strconv.ParseFloat(args[0], 64)
			if err != nil {
				return fmt.Errorf("%s:%d: bad maxslewrate %q: %w", p, line, args[0], err)
			}
			// chronyd caps the rate at its default.
			a.MaxSlewRate = min(r*1e-6, DefaultMaxSlewRate)
			a.MaxSlewRateSet = true
		case "rtcsync":
			a.RTCSync = true
		case "leapsecmode":
			if len(args) == 1 {
				a.LeapSecMode = strings.ToLower(args[0])
			}
		case "include":
			for _, pat := range args {
				matches, err := fs.Glob(fsys, fsPath(pat))
				if err != nil {
					return fmt.Errorf("%s:%d: bad include pattern %q: %w", p, line, pat, err)
				}
				sort.Strings(matches)
				for _, m := range matches {
					if err := a.readFile(fsys, "/"+m, depth+1); err != nil {
						return err
					}
				}
			}
		case "confdir":
			// Files named *.conf from all the directories, in name order;
			// a name in an earlier directory hides the same name in a later
			// one.
			byName := map[string]string{}
			for _, dir := range args {
				matches, err := fs.Glob(fsys, path.Join(fsPath(dir), "*.conf"))
				if err != nil {
					return fmt.Errorf("%s:%d: bad confdir %q: %w", p, line, dir, err)
				}
				for _, m := range matches {
					if _, ok := byName[path.Base(m)]; !ok {
						byName[path.Base(m)] = m
					}
				}
			}
			names := make([]string, 0, len(byName))
			for n := range byName {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if err := a.readFile(fsys, "/"+byName[n], depth+1); err != nil {
					return err
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading chrony configuration %s: %w", p, err)
	}
	return nil
}

// AuditFindings audits the chrony.conf at path and returns its findings for
// `clockwatch status`, warnings first. When the file cannot be audited the
// only finding is a warning that says why and what to set.
func AuditFindings(path string) []Finding {
	a, err := AuditFile(path)
	if err != nil {
		return []Finding{{Warning: true, Text: "Cannot audit chrony's configuration: " + err.Error() + "."}}
	}
	return a.Findings()
}
