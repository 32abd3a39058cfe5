package sched_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/sched"
)

// fakeThreads is a process whose threads appear as lists say: the n-th call
// of IDs returns lists[min(n, len-1)], a thread starts at start.
type fakeThreads struct {
	lists  [][]int
	calls  int
	start  int
	nice   map[int]int
	denied bool         // SetNice below start is refused
	gone   map[int]bool // SetNice finds these exited
	fail   error        // SetNice's other error
}

func (f *fakeThreads) IDs() ([]int, error) {
	l := f.lists[min(f.calls, len(f.lists)-1)]
	f.calls++
	return append([]int(nil), l...), nil
}

func (f *fakeThreads) Nice(tid int) (int, error) {
	if n, ok := f.nice[tid]; ok {
		return n, nil
	}
	return f.start, nil
}

func (f *fakeThreads) SetNice(tid, n int) error {
	switch {
	case f.gone[tid]:
		return fmt.Errorf("thread %d: %w", tid, sched.ErrGone)
	case f.denied && n < f.start:
		return fmt.Errorf("thread %d: %w", tid, sched.ErrDenied)
	case f.fail != nil:
		return f.fail
	}
	if f.nice == nil {
		f.nice = map[int]int{}
	}
	f.nice[tid] = n
	return nil
}

func TestLower(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		threads   *fakeThreads
		want      int
		result    sched.Result
		niceAfter map[int]int
	}{
		{
			name:      "every thread, the first first",
			threads:   &fakeThreads{lists: [][]int{{12, 10, 11}}},
			want:      -10,
			result:    sched.Result{Want: -10, Before: 0, After: -10, Threads: 3},
			niceAfter: map[int]int{10: -10, 11: -10, 12: -10},
		},
		{
			name:      "threads created while it runs",
			threads:   &fakeThreads{lists: [][]int{{10, 11}, {10, 11, 13}, {10, 11, 13, 14}}},
			want:      -10,
			result:    sched.Result{Want: -10, Before: 0, After: -10, Threads: 4},
			niceAfter: map[int]int{10: -10, 11: -10, 13: -10, 14: -10},
		},
		{
			name:      "a thread that exited",
			threads:   &fakeThreads{lists: [][]int{{10, 11}}, gone: map[int]bool{11: true}},
			want:      -5,
			result:    sched.Result{Want: -5, Before: 0, After: -5, Threads: 1},
			niceAfter: map[int]int{10: -5},
		},
		{
			name:    "no right: stays as started",
			threads: &fakeThreads{lists: [][]int{{10, 11}}, denied: true},
			want:    -10,
			result:  sched.Result{Want: -10, Before: 0, After: 0, Denied: true},
		},
		{
			name:    "already lower (the unit's Nice=)",
			threads: &fakeThreads{lists: [][]int{{10, 11}}, start: -10},
			want:    -10,
			result:  sched.Result{Want: -10, Before: -10, After: -10},
		},
		{
			name:    "never raised",
			threads: &fakeThreads{lists: [][]int{{10}}, start: -15},
			want:    -10,
			result:  sched.Result{Want: -10, Before: -15, After: -15},
		},
		{
			name:    "nice 0 asked: left alone",
			threads: &fakeThreads{lists: [][]int{{10}}},
			want:    0,
			result:  sched.Result{Want: 0, Before: 0, After: 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sched.Lower(tc.threads, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.result, got); diff != "" {
				t.Errorf("Lower (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.niceAfter, tc.threads.nice); diff != "" {
				t.Errorf("threads' nice values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLowerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		threads *fakeThreads
		want    int
		err     string
	}{
		{name: "below range", threads: &fakeThreads{lists: [][]int{{10}}}, want: -21, err: "nice -21: want -20 to 19"},
		{name: "above range", threads: &fakeThreads{lists: [][]int{{10}}}, want: 20, err: "nice 20: want -20 to 19"},
		{name: "no thread", threads: &fakeThreads{lists: [][]int{{}}}, want: -10, err: "listing the threads: none"},
		{name: "other failure", threads: &fakeThreads{lists: [][]int{{10, 11}}, fail: errors.New("EINVAL")}, want: -10, err: "setting thread 10's nice to -10 (0 threads set): EINVAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := sched.Lower(tc.threads, tc.want)
			if err == nil || err.Error() != tc.err {
				t.Errorf("Lower: error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestResultString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    sched.Result
		want string
	}{
		{sched.Result{Want: -10, Before: 0, After: -10, Threads: 7}, "nice 0 → -10 on 7 threads"},
		{sched.Result{Want: -10, Before: -10, After: -10}, "nice -10 already (as started: the unit's Nice= or nice(1)), at or below the -10 asked for"},
		{sched.Result{Want: -10, Denied: true}, "no CAP_SYS_NICE (nor an RLIMIT_NICE reaching -10), nice stays 0: under CPU load a step reaches subscribers later (add the capability, or run under the unit's Nice=)"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
