package timesyncd

import (
	"context"
	"testing"
)

// BenchmarkPoll is one poll of a timesyncd on a real dbus-daemon: a GetAll
// round trip through the bus and the decoding.
func BenchmarkPoll(b *testing.B) {
	addr, _ := startBus(b, "")
	fakeTimesyncd(b, addr, syncedProps())
	cfg := DefaultConfig()
	cfg.Address = addr
	p := NewPoller(cfg, nil)
	defer p.bus.Close()
	ctx := context.Background()
	p.Poll(ctx)
	if s := p.Snapshot(); !s.Up {
		b.Fatal(s.Err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Poll(ctx)
	}
}
