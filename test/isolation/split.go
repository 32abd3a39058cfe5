package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/stepdown"
)

// The split: how much of a measured subscriber's latency is clockwatch's.
// Beside the drilling subscriber (this process, at nice 0) run
//
//   - an observer: a second root subscriber on the stepdown socket, in a
//     process of its own at observerNice, that only reads and says when it
//     read each stepdown and resume;
//   - the control: a writer at the daemon's nice value that writes its
//     CLOCK_MONOTONIC into two unix socket pairs every controlInterval, read
//     by a reader at nice 0 and one at observerNice. No clockwatch is
//     involved: a reader's latency is the wake-up a process at its nice
//     value gets under the flood, the floor no daemon can beat.

// controlInterval is the control writer's period: about a drill's.
const controlInterval = 25 * time.Millisecond

// record is one line a helper child printed: a number and when it was read
// (CLOCK_MONOTONIC), and for an observer, the message's type and seq.
type record struct {
	typ  string
	seq  uint64
	made time.Duration // the message's mono_ns
	at   time.Duration // when the child read it
}

// stream collects the records a child prints on its stdout.
type stream struct {
	mu   sync.Mutex
	recs []record
}

func (s *stream) collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue
		}
		seq, _ := strconv.ParseUint(f[1], 10, 64)
		made, _ := strconv.ParseInt(f[2], 10, 64)
		at, _ := strconv.ParseInt(f[3], 10, 64)
		s.mu.Lock()
		s.recs = append(s.recs, record{typ: f[0], seq: seq, made: time.Duration(made), at: time.Duration(at)})
		s.mu.Unlock()
	}
}

// between returns the records read from from to to.
func (s *stream) between(from, to time.Duration) []record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []record
	for _, r := range s.recs {
		if r.at >= from && r.at <= to {
			out = append(out, r)
		}
	}
	return out
}

// helpers are the observer and the control's processes.
type helpers struct {
	kids                  []kid
	observer, ctl0, ctlLo *stream
}

func (h *helpers) stop() {
	for _, k := range h.kids {
		k.stop()
	}
}

// startHelpers starts the observer subscriber at observerNice, the control
// writer at daemonNice and its two readers at 0 and observerNice.
func startHelpers(self, socket string, daemonNice, observerNice int) (*helpers, error) {
	h := &helpers{observer: &stream{}, ctl0: &stream{}, ctlLo: &stream{}}
	start := func(nice int, out *stream, files []*os.File, args ...string) error {
		cmd := exec.Command("nice", append([]string{"-n", fmt.Sprint(nice), self}, args...)...)
		cmd.Stderr = os.Stderr
		cmd.ExtraFiles = files
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if out != nil {
			r, err := cmd.StdoutPipe()
			if err != nil {
				return err
			}
			go out.collect(r)
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", args[0], err)
		}
		h.kids = append(h.kids, kid{cmd})
		return nil
	}
	var w, r []*os.File
	for i := range 2 {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("the control's socket pair: %w", err)
		}
		w = append(w, os.NewFile(uintptr(fds[0]), fmt.Sprintf("control-w%d", i)))
		r = append(r, os.NewFile(uintptr(fds[1]), fmt.Sprintf("control-r%d", i)))
	}
	defer func() {
		for _, f := range append(w, r...) {
			f.Close() // the children have their copies
		}
	}()
	err := start(observerNice, h.observer, nil, "-helper=observe", "-socket="+socket)
	if err == nil {
		err = start(0, h.ctl0, r[:1], "-helper=control-read")
	}
	if err == nil {
		err = start(observerNice, h.ctlLo, r[1:], "-helper=control-read")
	}
	if err == nil {
		err = start(daemonNice, nil, w, "-helper=control-write")
	}
	if err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

// runHelper is a helper child: it runs until killed.
func runHelper(kind, socket string) error {
	out := bufio.NewWriter(os.Stdout)
	emit := func(typ string, seq uint64, made, at time.Duration) {
		fmt.Fprintf(out, "%s %d %d %d\n", typ, seq, int64(made), int64(at))
		out.Flush()
	}
	switch kind {
	case "observe":
		sub, err := subscribe(socket)
		if err != nil {
			return err
		}
		sub.conn.SetReadDeadline(time.Time{}) // it waits for drills as long as they take
		for {
			m, err := sub.conn.Read()
			at := mono()
			if err != nil {
				return err
			}
			if m.Type == stepdown.TypeStepdown || m.Type == stepdown.TypeResume {
				emit(m.Type, m.Seq, time.Duration(m.MonoNanos), at)
			}
		}
	case "control-write":
		// fds 3 and 4: a write end each.
		fds := []int{3, 4}
		var b [8]byte
		t := time.NewTicker(controlInterval)
		for range t.C {
			for _, fd := range fds {
				binary.LittleEndian.PutUint64(b[:], uint64(mono()))
				if _, err := unix.Write(fd, b[:]); err != nil {
					return fmt.Errorf("the control's write: %w", err)
				}
			}
		}
	case "control-read":
		// fd 3: the read end, read through Go's poller as a subscriber
		// reads its socket.
		c, err := net.FileConn(os.NewFile(3, "control"))
		if err != nil {
			return err
		}
		var b [8]byte
		for {
			if _, err := io.ReadFull(c, b[:]); err != nil {
				return fmt.Errorf("the control's read: %w", err)
			}
			at := mono()
			emit("control", 0, time.Duration(binary.LittleEndian.Uint64(b[:])), at)
		}
	}
	return fmt.Errorf("unknown helper %q", kind)
}

// split is one phase's figures beside the drilling subscriber's.
type split struct {
	// The drilling subscriber: drill sent → stepdown made (the daemon's
	// input path), stepdown made → read (the announcement).
	input, announce []time.Duration
	// The observer: drill sent → read, stepdown made → read, resume made
	// → read.
	obsDrill, obsAnnounce, obsResume []time.Duration
	ctl0, ctlLo                      []time.Duration // the control: written → read at nice 0, at observerNice
}

// splitOf picks the phase's records: the observer's for the drills this
// phase sent (sent: a stepdown's seq → when its drill was sent; resumes:
// the seqs of the resumes the drilling subscriber measured), the control's
// read from start to end.
func (h *helpers) splitOf(start, end time.Duration, sent map[uint64]time.Duration, resumes map[uint64]bool) split {
	var s split
	for _, r := range h.observer.between(start, end+time.Second) {
		switch {
		case r.typ == stepdown.TypeStepdown && sent[r.seq] != 0:
			s.obsDrill = append(s.obsDrill, r.at-sent[r.seq])
			s.obsAnnounce = append(s.obsAnnounce, r.at-r.made)
		case r.typ == stepdown.TypeResume && resumes[r.seq]:
			s.obsResume = append(s.obsResume, r.at-r.made)
		}
	}
	for _, r := range h.ctl0.between(start, end) {
		s.ctl0 = append(s.ctl0, r.at-r.made)
	}
	for _, r := range h.ctlLo.between(start, end) {
		s.ctlLo = append(s.ctlLo, r.at-r.made)
	}
	return s
}

// printSplit prints the split table: per phase, the drilling subscriber's
// drill in two (the daemon's input path, the announcement), the
// observer's figures and the control's.
func printSplit(phases []string, obsNice int, splits []split) {
	fmt.Printf("\nthe split: the drill's stepdown made (mono_ns) by the daemon; a root subscriber at nice %d that only reads; the control (no clockwatch: a writer at the daemon's nice value, readers at nice 0 and %d)\n", obsNice, obsNice)
	fmt.Printf("%-9s | %-24s | %-24s | %-24s | %-24s | %-24s | %-24s | %-24s | %s\n", "phase",
		"drill sent→made", "nice 0: made→read",
		fmt.Sprintf("nice %d: drill→stepdown", obsNice), fmt.Sprintf("nice %d: made→read", obsNice), fmt.Sprintf("nice %d: resume", obsNice),
		"floor, reader nice 0", fmt.Sprintf("floor, reader nice %d", obsNice), "samples (observer, control)")
	for i, ph := range phases {
		s := splits[i]
		fmt.Printf("%-9s | %-24s | %-24s | %-24s | %-24s | %-24s | %-24s | %-24s | %d, %d\n", ph,
			summarize(s.input), summarize(s.announce),
			summarize(s.obsDrill), summarize(s.obsAnnounce), summarize(s.obsResume),
			summarize(s.ctl0), summarize(s.ctlLo), len(s.obsDrill), len(s.ctl0))
	}
}

// printSlow lists the phase's drills slower than slow, from the request to
// the stepdown or to the observer's reading it, with the observer's made →
// read of the same stepdown.
func printSlow(phase string, slow time.Duration, m measured, obs []record) {
	seen := map[uint64]time.Duration{}
	for _, r := range obs {
		if r.typ == stepdown.TypeStepdown {
			seen[r.seq] = r.at - r.made
		}
	}
	for i, d := range m.drill {
		if d > slow || seen[m.seqs[i]] > slow {
			fmt.Printf("  %s drill %d (seq %d): %v: sent→made %v, made→read %v, the observer's made→read %v\n",
				phase, i, m.seqs[i], d.Round(time.Microsecond), m.input[i].Round(time.Microsecond), m.announce[i].Round(time.Microsecond), seen[m.seqs[i]].Round(time.Microsecond))
		}
	}
}
