package socket_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// floodUID is the uid the server is told the flooding process has (the
// test runs as one uid: the flooder's connections are told apart by pid).
const floodUID = 65534

// BenchmarkConnectFlood measures what another local user's connections do
// to a subscriber's events (issue 32 item 1): one good subscriber (a child
// process of this uid) and, with flood=on, another child the server takes
// for uid 65534 that holds as many idle connections as admission lets it
// (never reading) and opens and closes connections in a loop from four
// goroutines. Each iteration is one event; p50, p99 and max are the time
// from the event entering the server to its arrival at the good
// subscriber. Run with -benchtime=500x or more.
func BenchmarkConnectFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) { benchConnectFlood(b, flood) })
	}
}

func benchConnectFlood(b *testing.B, flood bool) {
	raiseFDLimit(8192)
	cfg := testConfig(b)
	cfg.Heartbeat = time.Second
	var floodPID atomic.Int64
	floodPID.Store(-1)
	opts := socket.Options{PeerCred: func(fd int) (socket.Cred, error) {
		cr, err := socket.PeerCred(fd)
		if err == nil && int64(cr.PID) == floodPID.Load() {
			cr.UID, cr.GID = floodUID, floodUID
		}
		return cr, err
	}}
	srv, ann := start(b, cfg, opts)

	if flood {
		// The flooder waits for its pid to be known, so that every one of
		// its connections is taken for uid 65534's.
		fc, out, in := startChild(b, "TestFloodConnections", floodEnv+"="+cfg.Socket)
		floodPID.Store(int64(fc.Process.Pid))
		if _, err := io.WriteString(in, "go\n"); err != nil {
			b.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "ready") {
			b.Fatalf("flood process: %q, %v", line, err)
		}
		b.Logf("flood process: %s", strings.TrimSpace(line))
	}
	_, br := startSubscribers(b, cfg.Socket, 1)
	// Events a few ms apart, as the flood goes on between them.
	lat := stepLatencies(b, ann, br, 2*time.Millisecond)
	q := quantileMS(lat)
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(lat[len(lat)-1].Seconds()*1e3, "max-ms")
	b.ReportMetric(float64(srv.Subscribers()), "subscribers")
	b.ReportMetric(0, "ns/op")
}

const floodEnv = "STEPDOWN_FLOOD_SOCKET"

// TestFloodConnections is BenchmarkConnectFlood's flooding process: it
// holds every connection admission gives it, reading none, then connects
// and closes in a loop until killed.
func TestFloodConnections(t *testing.T) {
	path := os.Getenv(floodEnv)
	if path == "" {
		t.Skip("only run as BenchmarkConnectFlood's child process")
	}
	raiseFDLimit(8192)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	for {
		c, err := net.Dial("unix", path)
		if errors.Is(err, syscall.EAGAIN) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// Admitted: a hello; refused: an error and the end.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, `"hello"`) {
			c.Close()
			break
		}
		held = append(held, c)
	}
	os.Stdout.WriteString("ready " + strconv.Itoa(len(held)) + " idle connections held\n")
	for range 4 {
		go func() {
			for {
				c, err := net.Dial("unix", path)
				if err == nil {
					c.Close()
				}
			}
		}()
	}
	select {}
}
