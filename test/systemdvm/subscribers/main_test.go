package main

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/stepdown"
)

// TestJudge: what a follower heard around a step, judged from the moment the
// clock changed (the mark) by the server's seqs, not by when it arrived.
func TestJudge(t *testing.T) {
	t.Parallel()
	const mark = 10 * time.Second
	hb := func(at time.Duration, st stepdown.State, seq uint64) record {
		return record{at: at, typ: stepdown.TypeHeartbeat, state: st, seq: seq}
	}
	down := record{at: mark + 200*time.Millisecond, typ: stepdown.TypeStepdown, state: stepdown.StateStepdown, reason: stepdown.ReasonStep, seq: 4, mono: mark + 50*time.Millisecond}
	up := record{at: mark + 31*time.Second, typ: stepdown.TypeResume, state: stepdown.StateOK, reason: stepdown.ReasonStep, seq: 2, mono: mark + 30050*time.Millisecond}
	// The resume process B sent after a restart: its seq and mono_ns.
	res := resumeEvent{seq: 2, mono: mark + 30050*time.Millisecond, ok: true}
	hello := func(at time.Duration, st stepdown.State, seq uint64) record {
		return record{at: at, typ: stepdown.TypeHello, state: st, seq: seq}
	}
	disc := record{at: mark + 2*time.Second, typ: stepdown.TypeDisconnected}
	type verdict struct {
		Stepdown, Resume, ByHello bool
		OKBefore, OKLate, OKHeld  bool
		StepdownSeq, ResumeSeq    int64
	}
	for _, tc := range []struct {
		name string
		recs []record
		want verdict
	}{
		{"clean", []record{hb(mark-time.Second, stepdown.StateOK, 3), down, hb(mark+time.Second, stepdown.StateStepdown, 4), up},
			verdict{Stepdown: true, Resume: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"an ok heartbeat composed before the stepdown, heard after the clock changed, is lawful",
			[]record{hb(mark+10*time.Millisecond, stepdown.StateOK, 3), down, up},
			verdict{Stepdown: true, Resume: true, OKBefore: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"an ok carrying the stepdown's seq, heard before it, was composed after it",
			[]record{hb(mark+10*time.Millisecond, stepdown.StateOK, 4), down, up},
			verdict{Stepdown: true, Resume: true, OKBefore: true, OKLate: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"an ok hello after a restart, inside the hold-down",
			[]record{down, {at: mark + 2*time.Second, typ: stepdown.TypeDisconnected}, {at: mark + 3*time.Second, typ: stepdown.TypeHello, state: stepdown.StateOK}, up},
			verdict{Stepdown: true, Resume: true, OKHeld: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"an ok heartbeat inside the hold-down",
			[]record{down, hb(mark+5*time.Second, stepdown.StateOK, 4), up},
			verdict{Stepdown: true, Resume: true, OKHeld: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"before the mark and drills are not the episode",
			[]record{
				{at: mark - time.Second, typ: stepdown.TypeStepdown, seq: 1},
				{at: mark + time.Millisecond, typ: stepdown.TypeStepdown, drill: true, seq: 2},
				{at: mark + 2*time.Millisecond, typ: stepdown.TypeResume, state: stepdown.StateOK, drill: true, seq: 3},
				down, up},
			verdict{Stepdown: true, Resume: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"a resume before any stepdown is not this step's (and said ok before it)",
			[]record{up},
			verdict{OKBefore: true}},
		{"no resume yet",
			[]record{down, hb(mark+time.Second, stepdown.StateStepdown, 4)},
			verdict{Stepdown: true, StepdownSeq: 4}},
		{"reconnecting when the server resumed: the hello composed after the resume ends the hold",
			[]record{down, disc, hello(mark+3*time.Second, stepdown.StateStepdown, 1), {at: mark + 31*time.Second, typ: stepdown.TypeDisconnected}, hello(mark+33*time.Second, stepdown.StateOK, 2)},
			verdict{Stepdown: true, Resume: true, ByHello: true, StepdownSeq: 4, ResumeSeq: 2}},
		{"an ok hello with an older seq than the resume's was composed inside the hold",
			[]record{down, disc, hello(mark+31*time.Second, stepdown.StateOK, 1)},
			verdict{Stepdown: true, OKHeld: true, StepdownSeq: 4}},
		{"an ok hello heard before the resume's mono_ns is inside the hold",
			[]record{down, disc, hello(mark+20*time.Second, stepdown.StateOK, 2)},
			verdict{Stepdown: true, OKHeld: true, StepdownSeq: 4}},
		{"an ok heartbeat without the resume before it is not a resume",
			[]record{down, hb(mark+31*time.Second, stepdown.StateOK, 2)},
			verdict{Stepdown: true, OKHeld: true, StepdownSeq: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := judge(tc.recs, mark, res)
			got := verdict{Stepdown: e.stepdown != nil, Resume: e.resume != nil, ByHello: e.byHello, OKBefore: e.okBefore, OKLate: e.okLate, OKHeld: e.okHeld}
			if e.stepdown != nil {
				got.StepdownSeq = int64(e.stepdown.seq)
			}
			if e.resume != nil {
				got.ResumeSeq = int64(e.resume.seq)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("judge (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefusesOutsideTheVM: the step is refused where this test runs (the
// host's kernel command line has no clockwatch.testvm=1). Only the check
// runs here; the system call is never reached.
func TestRefusesOutsideTheVM(t *testing.T) {
	t.Parallel()
	if err := checkTestVM(); err == nil {
		t.Fatal("checkTestVM passed outside the test VM")
	}
}

// TestFindResume: the resume is the one most clients heard after their
// stepdown, with its seq and mono_ns.
func TestFindResume(t *testing.T) {
	t.Parallel()
	const mark = time.Second
	down := record{at: 2 * time.Second, typ: stepdown.TypeStepdown, state: stepdown.StateStepdown, seq: 3}
	resume := func(seq uint64, mono time.Duration) record {
		return record{at: 40 * time.Second, typ: stepdown.TypeResume, state: stepdown.StateOK, seq: seq, mono: mono}
	}
	fl := []*follower{
		{recs: []record{down, resume(2, 31*time.Second)}},
		{recs: []record{down, resume(2, 31*time.Second)}},
		{recs: []record{down, resume(7, 33*time.Second)}},
		{recs: []record{down}},
		{recs: []record{resume(2, 31*time.Second)}}, // no stepdown: not this step's
	}
	want := resumeEvent{seq: 2, mono: 31 * time.Second, ok: true}
	if got := findResume(fl, mark); got != want {
		t.Errorf("findResume = %+v, want %+v", got, want)
	}
	if got := findResume(fl[3:4], mark); got.ok {
		t.Errorf("findResume without any resume = %+v, want none", got)
	}
}

// TestErrKind: the facts name a dial that timed out, a refused one and a
// lost connection apart (a dial's timeout was "other" and hid what it was).
func TestErrKind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, refused := net.Dial("unix", filepath.Join(dir, "none.sock"))
	ln, err := net.Listen("unix", filepath.Join(dir, "full.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A dial whose timeout has passed before it starts.
	_, timedOut := (&net.Dialer{Deadline: time.Now().Add(-time.Second)}).Dial("unix", filepath.Join(dir, "full.sock"))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{refused, "dial_ENOENT"},
		{timedOut, "dial_timeout"},
		{io.EOF, "EOF"},
		{os.ErrDeadlineExceeded, "timeout"},
		{errors.New("else"), "other"},
	} {
		if got := errKind(tc.err); got != tc.want {
			t.Errorf("errKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
