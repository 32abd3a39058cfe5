package subscriber

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Exit codes of Watch.
const (
	ExitOK       = 0
	ExitStepdown = 3
	ExitUnknown  = 4
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Path is the stepdown socket.
	Path string
	// JSON prints each message as its JSON line instead of a human line.
	JSON bool
	// Heartbeats prints heartbeats too.
	Heartbeats bool
	// ExitOnStepdown returns ExitStepdown as soon as the state is stepdown
	// (a stepdown event, or a hello while in stepdown).
	ExitOnStepdown bool
	// ExitOnUnknown returns ExitUnknown when the connection is lost or
	// cannot be made.
	ExitOnUnknown bool
	// NoAck leaves stepdowns unacknowledged. By default watch acks each
	// one as it prints it, so that an operator's watch does not show up
	// as a lock holder failing to release (ClockwatchStepdownUnacknowledged).
	NoAck bool
	// Now stamps human output; nil means time.Now.
	Now func() time.Time
	// Explain turns why the daemon cannot be reached into what to do
	// (start it, join the socket's group); nil prints the error. Human
	// output prints it once while the same explanation holds, not at every
	// retry; JSON output prints every disconnected event as it is.
	Explain func(error) string
}

// Watch prints what the stepdown socket says until ctx is done or, if asked,
// the state is not ok. It reconnects when the daemon goes away. It returns the
// process exit code.
func Watch(ctx context.Context, w io.Writer, o WatchOptions) int {
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := stepdown.Subscribe(ctx, stepdown.Options{Path: o.Path, Heartbeats: o.Heartbeats, EventBuffer: 1024})
	said := "" // the explanation printed for the outage going on
	for e := range sub.Events() {
		if !o.JSON && e.Type == stepdown.TypeDisconnected {
			why := e.Error
			if o.Explain != nil && e.Err != nil {
				why = o.Explain(e.Err)
			}
			if why != said {
				fmt.Fprintf(w, "%s unknown: %s\n", o.Now().UTC().Format(time.RFC3339Nano), why)
				said = why
			}
			if o.ExitOnUnknown {
				return ExitUnknown
			}
			continue
		}
		said = ""
		if o.JSON {
			w.Write(e.Message.AppendLine(nil))
		} else {
			fmt.Fprintf(w, "%s %s\n", o.Now().UTC().Format(time.RFC3339Nano), e.Message)
		}
		if e.Type == stepdown.TypeStepdown && !o.NoAck {
			_ = sub.Ack(e.Seq) // best effort: a lost connection is reported as its own event
		}
		if o.ExitOnStepdown && e.State == stepdown.StateStepdown {
			return ExitStepdown
		}
		if o.ExitOnUnknown && e.Type == stepdown.TypeDisconnected {
			return ExitUnknown
		}
	}
	return ExitOK
}

// DrillOptions configure Drill.
type DrillOptions struct {
	// Path is the stepdown socket.
	Path string
	// Reason is the reason the drill's stepdown carries (e.g. "step").
	Reason stepdown.Reason
	// Step is the simulated step, if not zero.
	Step time.Duration
	// Hold is how long the drill holds the stepdown state (the server's
	// default if zero).
	Hold time.Duration
	// JSON prints the drill's events as JSON lines.
	JSON bool
}

// Drill asks the running clockwatch for a drill and prints the drill's
// stepdown and resume as every subscriber sees them. Only root, clockwatch's
// own uid and stepdown.drill_uids may drill.
func Drill(ctx context.Context, w io.Writer, o DrillOptions) error {
	c, err := stepdown.Dial(ctx, o.Path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDial, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	hello, err := c.Read()
	if err != nil {
		return fmt.Errorf("waiting for the hello: %w", err)
	}
	if hello.Type != stepdown.TypeHello {
		return fmt.Errorf("expected a hello, got %s", hello)
	}
	if hello.State != stepdown.StateOK {
		return notOK(hello)
	}
	req := stepdown.Message{Type: stepdown.TypeDrill, Reason: o.Reason, HoldSeconds: o.Hold.Seconds()}
	if o.Step != 0 {
		req.StepSeconds = stepdown.Float(o.Step.Seconds())
	}
	if err := c.Send(req); err != nil {
		return err
	}
	print := func(m stepdown.Message) {
		if o.JSON {
			b, _ := json.Marshal(m)
			fmt.Fprintf(w, "%s\n", b)
		} else {
			fmt.Fprintln(w, m)
		}
	}
	var started bool
	for {
		// The resume comes after the hold; allow for the server's default.
		c.SetReadDeadline(time.Now().Add(max(o.Hold, 5*time.Minute) + 10*time.Second))
		m, err := c.Read()
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("waiting for the drill: %w", err)
		}
		switch {
		case m.Type == stepdown.TypeError:
			return fmt.Errorf("clockwatch refused the drill: %s (%s)", m.Error, m.Code)
		case m.Type == stepdown.TypeStepdown && !m.Drill:
			print(m)
			return errors.New("a real stepdown interrupted the drill")
		case m.Type == stepdown.TypeStepdown && !started:
			started = true
			print(m)
			// The drill's own connection is a subscriber too: ack like one,
			// or every drill leaves an unacknowledged stepdown behind
			// (clockwatch_stepdown_acks_total, ClockwatchStepdownUnacknowledged).
			if err := c.Ack(m.Seq); err != nil {
				return fmt.Errorf("acking the drill's stepdown: %w", err)
			}
		case m.Type == stepdown.TypeResume && started:
			print(m)
			return nil
		}
	}
}

// notOK says why there is no drill (a drill needs state ok: its resume tells
// the subscribers the clock is trusted again) and what would let one run.
// On a host no time daemon keeps (a laptop, a CI runner: the kernel is the
// only source, and it says unsynchronised with a 16 s error bound) that is
// a setting, named exactly; no drill runs over an untrusted clock, since its
// resume would tell lock holders the clock is trusted.
func notOK(hello stepdown.Message) error {
	state := string(hello.State)
	if hello.Reason != "" {
		state += " (" + string(hello.Reason)
		if hello.Source != "" {
			state += " from " + hello.Source
		}
		state += ")"
	}
	msg := fmt.Sprintf("no drill: the state is %s, and a drill needs state ok (its resume tells every subscriber the clock is trusted)", state)
	hold := ""
	if hello.HoldDownSeconds > 0 {
		hold = fmt.Sprintf(" (%gs)", hello.HoldDownSeconds)
	}
	switch {
	case hello.State == stepdown.StateUnknown:
		return errors.New(msg + ": clockwatch is starting and waits for its sources' first readings; try again in a few seconds")
	case hello.Source == kernelSource && (hello.Reason == stepdown.ReasonErrorBound || hello.Reason == stepdown.ReasonUnsynchronized):
		return errors.New(msg + ": no time daemon answers and the kernel says nobody disciplines this clock. " +
			"Install and start one (chronyd), or, on a host whose clock nothing keeps on purpose (a laptop, a CI runner), " +
			"set stepdown.triggers.error_bound.enabled: false and stepdown.triggers.unsynchronized.enabled: false " +
			"in clockwatch's configuration and reload it (systemctl reload clockwatch, or SIGHUP); " +
			"the drill runs once the hold-down" + hold + " has passed (docs/install.md, \"Hosts without a time daemon\")")
	case hello.Reason == stepdown.ReasonDrill:
		return errors.New(msg + ": a drill is running; try again when it has resumed")
	}
	if row, ok := policy.Lookup(hello.Reason); ok {
		return fmt.Errorf("%s: the trigger %s (stepdown.triggers.%s) holds it; the drill runs once it clears and the hold-down%s has passed (clockwatch status says why)",
			msg, row.Key, row.Key, hold)
	}
	return errors.New(msg + " (clockwatch status says why)")
}

// ErrDial is wrapped by Drill when the socket could not be reached: the
// command says what to do about it (no daemon, the socket's group).
var ErrDial = errors.New("cannot reach clockwatch's stepdown socket")

// kernelSource is the kernel's source name: its conditions hold only while
// no time daemon answers.
const kernelSource = "kernel"
