package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("clockstep", flag.ContinueOnError)
	fl.SetOutput(stderr)
	method := fl.String("method", "settime", "how to step when a step does not say: settime (clock_settime) or setoffset (clock_adjtime ADJ_SETOFFSET)")
	gapOnly := fl.Bool("gap", false, "only print REALTIME−BOOTTIME")
	wait := fl.String("wait", "", "shell command run after each step, with $CW_STEP set to the step's number; it must exit 0")
	first := fl.Int("first", 1, "number of the first step, for -wait")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: clockstep [-method settime|setoffset] [-wait CMD] [-first N] [METHOD:]DELTA...\n       clockstep -gap")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "clockstep: refusing to run: %v\n", err)
		return 3
	}
	if *gapOnly {
		if fl.NArg() != 0 {
			fmt.Fprintln(stderr, "clockstep: -gap takes no argument")
			return 2
		}
		mono := guest.Mono()
		g, err := guest.Gap()
		if err == nil {
			err = guest.Emit(stdout, guest.KindGap, guest.GapReading{GapNS: g, MonoNS: mono})
		}
		if err != nil {
			fmt.Fprintf(stderr, "clockstep: %v\n", err)
			return 1
		}
		return 0
	}
	if fl.NArg() == 0 {
		fl.Usage()
		return 2
	}
	plans, err := parsePlans(fl.Args(), *method)
	if err != nil {
		fmt.Fprintf(stderr, "clockstep: %v\n", err)
		return 2
	}
	for i, p := range plans {
		s, err := step(p.method, p.delta)
		if err == nil {
			err = guest.Emit(stdout, guest.KindStep, s)
		}
		if err == nil && *wait != "" {
			err = runWait(*wait, *first+i, stdout, stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "clockstep: step %d (%s %v): %v\n", *first+i, p.method, p.delta, err)
			return 1
		}
	}
	return 0
}

// plan is one step to make.
type plan struct {
	method string
	delta  time.Duration
}

// parsePlans reads [METHOD:]DELTA arguments.
func parsePlans(args []string, defaultMethod string) ([]plan, error) {
	var plans []plan
	for _, arg := range args {
		m, d := defaultMethod, arg
		if before, after, ok := strings.Cut(arg, ":"); ok {
			m, d = before, after
		}
		delta, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", arg, err)
		}
		if m != "settime" && m != "setoffset" {
			return nil, fmt.Errorf("step %q: unknown method %q (want settime or setoffset)", arg, m)
		}
		plans = append(plans, plan{m, delta})
	}
	return plans, nil
}

// runWait runs the -wait command for step n. Running it from here, rather
// than one clockstep per step from the script, saves the start of a Go
// program per step: a tenth of a second under TCG.
func runWait(command string, n int, stdout, stderr io.Writer) error {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), "CW_STEP="+strconv.Itoa(n))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("waiting with %q: %w", command, err)
	}
	return nil
}

func step(method string, delta time.Duration) (guest.Step, error) {
	s := guest.Step{Method: method, RequestedNS: int64(delta)}
	var err error
	if s.GapBeforeNS, err = guest.Gap(); err != nil {
		return s, err
	}
	if method == "setoffset" {
		err = stepSetoffset(&s, delta)
	} else {
		err = stepSettime(&s, delta)
	}
	if err != nil {
		return s, err
	}
	if s.GapAfterNS, err = guest.Gap(); err != nil {
		return s, err
	}
	s.AppliedNS = s.GapAfterNS - s.GapBeforeNS
	return s, nil
}

func stepSettime(s *guest.Step, delta time.Duration) error {
	var real unix.Timespec
	s.MonoBeforeSetNS = guest.Mono()
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		return fmt.Errorf("reading CLOCK_REALTIME: %w", err)
	}
	to := unix.NsecToTimespec(real.Nano() + int64(delta))
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &to); err != nil {
		return fmt.Errorf("clock_settime(CLOCK_REALTIME, %d.%09d): %w", to.Sec, to.Nsec, err)
	}
	s.MonoAfterSetNS = guest.Mono()
	return nil
}

func stepSetoffset(s *guest.Step, delta time.Duration) error {
	tx := unix.Timex{Modes: unix.ADJ_SETOFFSET | unix.ADJ_NANO, Time: offsetTimeval(delta)}
	s.MonoBeforeSetNS = guest.Mono()
	if _, err := unix.ClockAdjtime(unix.CLOCK_REALTIME, &tx); err != nil {
		return fmt.Errorf("clock_adjtime(CLOCK_REALTIME, ADJ_SETOFFSET %v): %w", delta, err)
	}
	s.MonoAfterSetNS = guest.Mono()
	return nil
}

// offsetTimeval returns delta as ADJ_SETOFFSET|ADJ_NANO wants it: seconds
// plus non-negative nanoseconds (ADJ_NANO makes the usec field nanoseconds),
// so -0.25 s is -1 s + 750,000,000 ns.
func offsetTimeval(delta time.Duration) unix.Timeval {
	sec, nsec := int64(delta)/1e9, int64(delta)%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	return unix.Timeval{Sec: sec, Usec: nsec}
}
