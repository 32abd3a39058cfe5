package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("schedslice", flag.ContinueOnError)
	fl.SetOutput(stderr)
	pid := fl.Int("pid", 0, "the process whose threads get the slice")
	slice := fl.Duration("slice", 100*time.Microsecond, "the slice (the kernel clamps it to 0.1-100 ms)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "schedslice: refusing to run: %v\n", err)
		return 1
	}
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", *pid))
	if err != nil {
		fmt.Fprintf(stderr, "schedslice: %v\n", err)
		return 1
	}
	for _, e := range es {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			fmt.Fprintf(stderr, "schedslice: sched_getattr(%d): %v\n", tid, err)
			return 1
		}
		a.Runtime = uint64(slice.Nanoseconds())
		if err := unix.SchedSetAttr(tid, a, 0); err != nil {
			fmt.Fprintf(stderr, "schedslice: sched_setattr(%d, runtime %v): %v\n", tid, *slice, err)
			return 1
		}
		b, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			fmt.Fprintf(stderr, "schedslice: sched_getattr(%d): %v\n", tid, err)
			return 1
		}
		if b.Runtime == 0 {
			var u unix.Utsname
			_ = unix.Uname(&u)
			fmt.Fprintf(stderr, "schedslice: thread %d: the kernel (%s) kept no custom slice\n", tid, unix.ByteSliceToString(u.Release[:]))
			return 1
		}
		fmt.Fprintf(stdout, "schedslice: thread %d: policy %d nice %d slice %v\n", tid, b.Policy, b.Nice, time.Duration(b.Runtime))
	}
	return 0
}
