package leader

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestManualGuard(t *testing.T) {
	t.Parallel()
	var g ManualGuard
	if err := g.WaitOK(t.Context()); err != nil {
		t.Fatalf("WaitOK while ok: %v", err)
	}
	ctx, cancel := g.Guard(t.Context())
	defer cancel()
	if ctx.Err() != nil {
		t.Fatal("guard cancelled while ok")
	}
	g.Stepdown()
	if !errors.Is(context.Cause(ctx), ErrStepdown) {
		t.Fatalf("guard cause after Stepdown = %v, want ErrStepdown", context.Cause(ctx))
	}
	late, lateCancel := g.Guard(t.Context())
	defer lateCancel()
	if !errors.Is(context.Cause(late), ErrStepdown) {
		t.Fatal("a guard taken during a stepdown is not cancelled")
	}
	short, shortCancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer shortCancel()
	if err := g.WaitOK(short); err == nil {
		t.Fatal("WaitOK returned during a stepdown")
	}
	done := make(chan error, 1)
	go func() { done <- g.WaitOK(t.Context()) }()
	g.Resume()
	if err := <-done; err != nil {
		t.Fatalf("WaitOK after Resume: %v", err)
	}
	again, againCancel := g.Guard(t.Context())
	defer againCancel()
	if again.Err() != nil {
		t.Fatal("guard cancelled after Resume")
	}
}
