package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// farFuture is the absolute expiry the timer is armed with (year 2255): it
// never fires; only its cancellation matters.
const farFuture = 9_000_000_000

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("stepwatch", flag.ContinueOnError)
	fl.SetOutput(stderr)
	ready := fl.String("ready", "", "file to create once the timer is armed")
	wakes := fl.String("wakes", "", "file holding the number of wakes so far")
	blocking := fl.Bool("blocking", false, "read the timerfd in a blocking system call instead of through Go's netpoller")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "stepwatch: refusing to run: %v\n", err)
		return 3
	}
	if err := watch(*ready, *wakes, *blocking, stdout); err != nil {
		fmt.Fprintf(stderr, "stepwatch: %v\n", err)
		return 1
	}
	return 0
}

func watch(readyFile, wakesFile string, blocking bool, stdout io.Writer) error {
	flags, how := unix.TFD_NONBLOCK|unix.TFD_CLOEXEC, guest.WatcherNetpoll
	if blocking {
		flags, how = unix.TFD_CLOEXEC, guest.WatcherBlocking
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, flags)
	if err != nil {
		return fmt.Errorf("timerfd_create(CLOCK_REALTIME): %w", err)
	}
	// A non-blocking fd in an os.File parks reads in the netpoller, as the
	// daemon does it; a blocking one makes each read a blocking system call
	// on a thread of its own, the kernel's share of the latency alone.
	f := os.NewFile(uintptr(fd), "timerfd")
	defer f.Close()
	prev, err := guest.Gap()
	if err != nil {
		return err
	}
	if err := arm(fd); err != nil {
		return err
	}
	if readyFile != "" {
		if err := os.WriteFile(readyFile, nil, 0o644); err != nil {
			return fmt.Errorf("writing ready file: %w", err)
		}
	}
	buf := make([]byte, 8)
	for n := 1; ; {
		_, err := f.Read(buf)
		if err == nil {
			continue // The timer expired: not before 2255.
		}
		if !errors.Is(err, unix.ECANCELED) {
			return fmt.Errorf("reading timerfd: %w", err)
		}
		w := guest.Wake{Watcher: how, N: n, MonoNS: guest.Mono()}
		if w.GapAfterNS, err = guest.Gap(); err != nil {
			return err
		}
		w.GapBeforeNS, w.DeltaNS = prev, w.GapAfterNS-prev
		if err := arm(fd); err != nil {
			return err
		}
		if prev, err = guest.Gap(); err != nil {
			return err
		}
		w.RearmMovedNS = prev - w.GapAfterNS
		if err := guest.Emit(stdout, guest.KindWake, w); err != nil {
			return err
		}
		if wakesFile != "" {
			if err := writeAtomic(wakesFile, strconv.Itoa(n)+"\n"); err != nil {
				return err
			}
		}
		n++
	}
}

func arm(fd int) error {
	spec := unix.ItimerSpec{Value: unix.Timespec{Sec: farFuture}}
	if err := unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET, &spec, nil); err != nil {
		return fmt.Errorf("arming timerfd: %w", err)
	}
	return nil
}

func writeAtomic(name, content string) error {
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}
