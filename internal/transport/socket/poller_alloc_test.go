package socket

import "testing"

// TestServeWaitingAllocatesNothing: the look a fan-out takes between every
// two slices (64 writes) costs no allocation (it made three: its events,
// their count and the callback, 192 a message to 4,096 subscribers).
func TestServeWaitingAllocatesNothing(t *testing.T) {
	p, err := newInputPoller()
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if n := testing.AllocsPerRun(100, p.serveWaiting); n != 0 {
		t.Errorf("serveWaiting allocates %v times a call, want 0", n)
	}
}
