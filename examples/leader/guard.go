package leader

import (
	"context"
	"errors"
	"sync"

	"github.com/clockwatch/clockwatch/stepdown"
)

// ClockGuard tells a node whether its clock can be trusted. It is the part of
// clockwatch's stepdown client (package
// github.com/clockwatch/clockwatch/stepdown, whose *Subscription has both
// methods) that the node needs.
type ClockGuard interface {
	// Guard returns a context cancelled the moment the clock stops being
	// trustworthy, or already cancelled if it is not trustworthy now. The
	// leader books only under this context.
	Guard(parent context.Context) (context.Context, context.CancelFunc)
	// WaitOK blocks until the clock can be trusted or ctx is done.
	WaitOK(ctx context.Context) error
}

// ErrStepdown is the cancellation cause of a ManualGuard's contexts.
var ErrStepdown = errors.New("stepdown: clock cannot be trusted")

// ManualGuard is a ClockGuard driven by calls to Stepdown and Resume: a stand
// in for clockwatch in tests. The zero value is ok. It is safe for concurrent
// use.
type ManualGuard struct {
	mu     sync.Mutex
	down   bool
	up     chan struct{} // closed when the state turns ok; nil while ok
	guards map[*context.CancelCauseFunc]struct{}
}

var (
	_ ClockGuard = (*ManualGuard)(nil)
	_ ClockGuard = (*stepdown.Subscription)(nil)
	_ Acker      = (*stepdown.Subscription)(nil)
)

// Stepdown turns the state to stepdown and cancels every guard.
func (g *ManualGuard) Stepdown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		return
	}
	g.down = true
	g.up = make(chan struct{})
	for c := range g.guards {
		(*c)(ErrStepdown)
	}
	clear(g.guards)
}

// Resume turns the state back to ok.
func (g *ManualGuard) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down {
		return
	}
	g.down = false
	close(g.up)
	g.up = nil
}

// Guard implements ClockGuard.
func (g *ManualGuard) Guard(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down {
		cancel(ErrStepdown)
		return ctx, func() {}
	}
	if g.guards == nil {
		g.guards = map[*context.CancelCauseFunc]struct{}{}
	}
	key := &cancel
	g.guards[key] = struct{}{}
	return ctx, func() {
		g.mu.Lock()
		delete(g.guards, key)
		g.mu.Unlock()
		cancel(context.Canceled)
	}
}

// WaitOK implements ClockGuard.
func (g *ManualGuard) WaitOK(ctx context.Context) error {
	g.mu.Lock()
	up := g.up
	g.mu.Unlock()
	if up == nil {
		return nil
	}
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// noGuard is the ClockGuard of a node that ignores clockwatch.
type noGuard struct{}

func (noGuard) Guard(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(parent)
}

func (noGuard) WaitOK(context.Context) error { return nil }
