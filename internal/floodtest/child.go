package floodtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// childEnv names the flood a process started by this package runs; its
// value is the flood as JSON.
const childEnv = "CLOCKWATCH_FLOODTEST_CHILD"

// Flood kinds.
const (
	// KindConnect opens and closes connections to the stepdown socket in
	// a loop.
	KindConnect = "connect"
	// KindIdle holds subscribers that never read.
	KindIdle = "idle"
	// KindMetrics scrapes /metrics in a loop over keep-alive connections.
	KindMetrics = "metrics"
	// KindTLS makes full TLS handshakes with the HTTP port in a loop.
	KindTLS = "tls"
)

// Flood is one flooding process.
type Flood struct {
	Kind string
	// UID and GID run the process (another local user); 0 is root.
	UID, GID uint32
	// N is how many loops (connect, metrics, tls) or subscribers (idle).
	N int
}

func (f Flood) String() string {
	switch f.Kind {
	case KindConnect:
		return fmt.Sprintf("connect/close flood (uid %d, %d loops)", f.UID, f.N)
	case KindIdle:
		return fmt.Sprintf("%d never-reading subscribers (uid %d)", f.N, f.UID)
	case KindMetrics:
		return fmt.Sprintf("/metrics flood (%d keep-alive connections)", f.N)
	case KindTLS:
		return fmt.Sprintf("TLS-handshake flood (%d loops)", f.N)
	}
	return f.Kind
}

// childSpec is what a flood process is told.
type childSpec struct {
	Flood
	Socket string // the stepdown socket
	Addr   string // the HTTPS host:port
}

// Child runs the flood this process was started for and exits, when it was
// started as one by this package (an environment variable says so); else it
// returns at once. Call it first in main, or in TestMain of a test that
// floods.
func Child() {
	v := os.Getenv(childEnv)
	if v == "" {
		return
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "floodtest child: %s=%q: %v\n", childEnv, v, err)
		os.Exit(2)
	}
	// The parent runs at the daemon's nice value; a flood runs at 0.
	if err := renice(0); err != nil {
		fmt.Fprintf(os.Stderr, "floodtest child: %v\n", err)
		os.Exit(2)
	}
	if err := runChild(spec, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "floodtest child %s: %v\n", spec.Kind, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runChild floods until stop reaches its end (the parent closes the pipe),
// writing "ready" once flooding and, at the end, "ops N errs M".
func runChild(spec childSpec, stop io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ops, errs atomic.Int64
	var wg sync.WaitGroup
	switch spec.Kind {
	case KindConnect:
		for range spec.N {
			wg.Go(func() {
				for ctx.Err() == nil {
					c, err := net.Dial("unix", spec.Socket)
					if err != nil {
						count(ctx, &errs)
						continue
					}
					c.Close()
					ops.Add(1)
				}
			})
		}
	case KindIdle:
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range spec.N {
			c, err := net.Dial("unix", spec.Socket)
			if err != nil {
				errs.Add(1)
				continue
			}
			conns = append(conns, c)
			ops.Add(1)
		}
	case KindMetrics:
		for range spec.N {
			wg.Go(func() {
				tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 1}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+spec.Addr+"/metrics", nil)
					resp, err := c.Do(req)
					if err != nil {
						count(ctx, &errs)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						errs.Add(1)
						continue
					}
					ops.Add(1)
				}
			})
		}
	case KindTLS:
		for range spec.N {
			wg.Go(func() {
				d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // no session cache: full handshakes
				for ctx.Err() == nil {
					dctx, done := context.WithTimeout(ctx, 10*time.Second)
					c, err := d.DialContext(dctx, "tcp", spec.Addr)
					done()
					if err != nil {
						count(ctx, &errs)
						continue
					}
					c.Close()
					ops.Add(1)
				}
			})
		}
	default:
		return fmt.Errorf("unknown flood kind %q", spec.Kind)
	}
	fmt.Fprintln(out, "ready", ops.Load(), errs.Load())
	io.Copy(io.Discard, bufio.NewReader(stop))
	cancel()
	wg.Wait()
	_, err := fmt.Fprintln(out, "ops", ops.Load(), "errs", errs.Load())
	return err
}

// count counts an error that is not the flood being stopped.
func count(ctx context.Context, errs *atomic.Int64) {
	if ctx.Err() == nil {
		errs.Add(1)
	}
}
