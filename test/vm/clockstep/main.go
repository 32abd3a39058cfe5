package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Step is the result line clockstep prints for a step (kind "step").
type Step struct {
	Method      string `json:"method"`
	RequestedNS int64  `json:"requested_ns"`
	// AppliedNS is GapAfterNS−GapBeforeNS: the step the kernel made.
	AppliedNS       int64 `json:"applied_ns"`
	GapBeforeNS     int64 `json:"gap_before_ns"`
	GapAfterNS      int64 `json:"gap_after_ns"`
	MonoBeforeSetNS int64 `json:"mono_before_set_ns"`
	MonoAfterSetNS  int64 `json:"mono_after_set_ns"`
}

// Gap is the result line of clockstep -gap (kind "gap").
type Gap struct {
	GapNS  int64 `json:"gap_ns"`
	MonoNS int64 `json:"mono_ns"`
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("clockstep", flag.ContinueOnError)
	fl.SetOutput(stderr)
	method := fl.String("method", "settime", "how to step: settime (clock_settime) or setoffset (clock_adjtime ADJ_SETOFFSET)")
	gapOnly := fl.Bool("gap", false, "only print REALTIME−BOOTTIME")
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
			err = guest.Emit(stdout, "gap", Gap{GapNS: g, MonoNS: mono})
		}
		if err != nil {
			fmt.Fprintf(stderr, "clockstep: %v\n", err)
			return 1
		}
		return 0
	}
	if fl.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: clockstep [-method settime|setoffset] DELTA | clockstep -gap")
		return 2
	}
	delta, err := time.ParseDuration(fl.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "clockstep: %v\n", err)
		return 2
	}
	s, err := step(*method, delta)
	if err == nil {
		err = guest.Emit(stdout, "step", s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "clockstep: %v\n", err)
		return 1
	}
	return 0
}

func step(method string, delta time.Duration) (Step, error) {
	s := Step{Method: method, RequestedNS: int64(delta)}
	var err error
	if s.GapBeforeNS, err = guest.Gap(); err != nil {
		return s, err
	}
	switch method {
	case "settime":
		err = stepSettime(&s, delta)
	case "setoffset":
		err = stepSetoffset(&s, delta)
	default:
		return s, fmt.Errorf("unknown method %q (want settime or setoffset)", method)
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

func stepSettime(s *Step, delta time.Duration) error {
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

func stepSetoffset(s *Step, delta time.Duration) error {
	// The kernel wants the offset as seconds plus non-negative nanoseconds
	// (ADJ_NANO turns the usec field into nanoseconds).
	sec, nsec := int64(delta)/1e9, int64(delta)%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	tx := unix.Timex{Modes: unix.ADJ_SETOFFSET | unix.ADJ_NANO, Time: unix.Timeval{Sec: sec, Usec: nsec}}
	s.MonoBeforeSetNS = guest.Mono()
	if _, err := unix.ClockAdjtime(unix.CLOCK_REALTIME, &tx); err != nil {
		return fmt.Errorf("clock_adjtime(CLOCK_REALTIME, ADJ_SETOFFSET %v): %w", delta, err)
	}
	s.MonoAfterSetNS = guest.Mono()
	return nil
}
