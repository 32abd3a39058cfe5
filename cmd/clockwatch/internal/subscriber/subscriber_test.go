package subscriber_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/cmd/clockwatch/internal/subscriber"
	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

func startServer(t *testing.T) string {
	t.Helper()
	path, _ := startServerWith(t)
	return path
}

func startServerWith(t *testing.T) (string, *socket.Server) {
	t.Helper()
	cfg := socket.DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "sd.sock")
	cfg.Heartbeat = 20 * time.Millisecond
	ann := announce.New(policy.DefaultConfig(), announce.Options{Epoch: 3})
	t.Cleanup(ann.Close)
	s, err := socket.New(cfg, ann, socket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-s.Ready()
	ann.ProbeOK("test")
	return cfg.Socket, s
}

func TestDrillAndWatch(t *testing.T) {
	t.Parallel()
	path, srv := startServerWith(t)
	fixed := func() time.Time { return time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC) }
	var watched testtool.SyncBuffer
	code := make(chan int, 1)
	go func() {
		code <- subscriber.Watch(context.Background(), &watched, subscriber.WatchOptions{Path: path, ExitOnStepdown: true, Now: fixed})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(watched.String(), "hello") {
		if time.Now().After(deadline) {
			t.Fatal("watch printed no hello")
		}
		time.Sleep(2 * time.Millisecond)
	}
	var out bytes.Buffer
	err := subscriber.Drill(context.Background(), &out, subscriber.DrillOptions{Path: path, Reason: stepdown.ReasonStep, Step: -12400 * time.Millisecond, Hold: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := "stepdown state=stepdown epoch=3 seq=2 reason=step drill=true step=-12.4s detail=\"drill: nothing is wrong with the clock\"\n" +
		"resume state=ok epoch=3 seq=3 reason=drill drill=true detail=\"drill over\"\n"
	if out.String() != want {
		t.Errorf("drill printed\n%s\nwant\n%s", out.String(), want)
	}
	if c := <-code; c != subscriber.ExitStepdown {
		t.Errorf("watch exit code %d, want %d", c, subscriber.ExitStepdown)
	}
	wantWatch := "2026-11-30T05:00:00Z hello state=ok epoch=3 seq=1\n" +
		"2026-11-30T05:00:00Z stepdown state=stepdown epoch=3 seq=2 reason=step drill=true step=-12.4s detail=\"drill: nothing is wrong with the clock\"\n"
	if watched.String() != wantWatch {
		t.Errorf("watch printed\n%s\nwant\n%s", watched.String(), wantWatch)
	}
	// Both the drill's own connection and watch acknowledged the stepdown.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if acks(t, srv) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acks counted: %v, want 2", acks(t, srv))
		}
	}
}

func registry(t *testing.T, s *socket.Server) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	return reg
}

func acks(t *testing.T, s *socket.Server) float64 {
	t.Helper()
	mfs, err := registry(t, s).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == socket.MetricAcks {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func TestWatchJSONExitOnUnknown(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	code := subscriber.Watch(context.Background(), &out, subscriber.WatchOptions{Path: filepath.Join(t.TempDir(), "none.sock"), JSON: true, ExitOnUnknown: true})
	if code != subscriber.ExitUnknown {
		t.Errorf("exit code %d, want %d", code, subscriber.ExitUnknown)
	}
	m, err := stepdown.ParseMessage(out.Bytes())
	if err != nil || m.Type != stepdown.TypeDisconnected || m.State != stepdown.StateUnknown || !strings.Contains(m.Error, "no such file") {
		t.Errorf("printed %q (%v)", out.String(), err)
	}
}

func TestDrillRefused(t *testing.T) {
	t.Parallel()
	path := startServer(t)
	err := subscriber.Drill(context.Background(), &bytes.Buffer{}, subscriber.DrillOptions{Path: path, Reason: "bogus"})
	if err == nil || !strings.Contains(err.Error(), "bad_request") {
		t.Errorf("got %v", err)
	}
}
