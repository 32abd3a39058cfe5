package sched_test

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/sched"
)

// statNice reads a thread's nice from /proc/self/task/<tid>/stat (field 19).
func statNice(t *testing.T, tid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProc reads the real threads: Nice agrees with /proc, and raising a
// thread's value (always permitted) is seen there; lowering it back is
// refused as ErrDenied without CAP_SYS_NICE.
func TestProc(t *testing.T) {
	// Not parallel: it renices a thread of the test process.
	runtime.LockOSThread() // a thread of its own, which it leaves to die
	var p sched.Proc
	ids, err := p.IDs()
	if err != nil || len(ids) == 0 {
		t.Fatalf("IDs: %v, %v", ids, err)
	}
	tid := os.Getpid()
	for _, id := range ids {
		if id == tid {
			tid = 0
		}
	}
	if tid != 0 {
		t.Fatalf("IDs %v: the process's first thread %d missing", ids, os.Getpid())
	}
	self := unix.Gettid()
	n, err := p.Nice(self)
	if err != nil {
		t.Fatal(err)
	}
	if want := statNice(t, self); n != want {
		t.Fatalf("Nice(%d) = %d, /proc says %d", self, n, want)
	}
	if n >= sched.MaxNice {
		t.Skipf("already at nice %d", n)
	}
	if err := p.SetNice(self, n+1); err != nil {
		t.Fatal(err)
	}
	if got := statNice(t, self); got != n+1 {
		t.Fatalf("after SetNice(%d, %d) /proc says %d", self, n+1, got)
	}
	err = p.SetNice(self, n)
	if !hasSysNice(t) && !rlimitAllows(t, n) {
		if !errors.Is(err, sched.ErrDenied) {
			t.Errorf("lowering without CAP_SYS_NICE: %v, want ErrDenied", err)
		}
	} else if err != nil {
		t.Errorf("lowering with the right: %v", err)
	}
	if err := p.SetNice(1<<30, 0); !errors.Is(err, sched.ErrGone) {
		t.Errorf("SetNice of no thread: %v, want ErrGone", err)
	}
}

// hasSysNice says whether this process has CAP_SYS_NICE (bit 23) in its
// effective set.
func hasSysNice(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:\t"); ok {
			c, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return c&(1<<23) != 0
		}
	}
	return false
}

// rlimitAllows says whether RLIMIT_NICE lets this process lower a nice value
// to n (the limit is 20 − the lowest nice).
func rlimitAllows(t *testing.T, n int) bool {
	t.Helper()
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NICE, &l); err != nil {
		t.Fatal(err)
	}
	return int64(l.Cur) >= int64(20-n)
}
