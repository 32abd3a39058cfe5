package examples

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/stepdown"
	"github.com/clockwatch/clockwatch/stepdown/server"
)

func TestPythonClient(t *testing.T) {
	t.Parallel()
	py := testtool.Require(t, "python3")
	runExample(t, exec.Command(py, "python/clockwatch_client.py"))
}

func TestJavaClient(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	java := testtool.Require(t, "java")
	cmd := exec.Command(java, "Example.java")
	cmd.Dir = "java"
	runExample(t, cmd)
}

// runExample starts a server, runs the client with the socket and
// --until-resume, drills once the client has its hello, and checks what the
// client printed and that its ack arrived.
func runExample(t *testing.T, cmd *exec.Cmd) {
	cfg := server.DefaultConfig()
	cfg.Socket = filepath.Join(t.TempDir(), "stepdown.sock")
	cfg.Heartbeat = 100 * time.Millisecond
	s, err := server.New(cfg, server.Options{Epoch: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-s.Ready()
	s.ProbeOK("test")

	cmd.Args = append(cmd.Args, cfg.Socket, "--until-resume")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "hello state=ok") {
			if err := s.Drill(server.DrillRequest{Reason: stepdown.ReasonStep, StepSeconds: stepdown.Float(-12.4), Hold: 200 * time.Millisecond}); err != nil {
				t.Error(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	want := []string{
		"hello state=ok epoch=4 seq=1",
		"stepdown seq=2 reason=step drill=true step_seconds=-12.4",
		"releasing locks: reason=step drill=true",
		"acked seq=2",
		"resume seq=3 reason=drill",
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("client printed\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for acks(t, s) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the server never counted the client's ack")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func acks(t *testing.T, s *server.Server) float64 {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == server.MetricAcks {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
