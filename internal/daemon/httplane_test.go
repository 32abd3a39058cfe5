package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// Every request is handled in a turn of the daemon's lane, into a buffer: a
// client that never reads its (large) response holds no turn, and other
// requests are served meanwhile; headers, status and body pass through.
func TestHTTPSlowReaderHoldsNoTurn(t *testing.T) {
	t.Parallel()
	d := New(nil, Options{Web: webConfig("127.0.0.1:0")}, slog.New(slog.DiscardHandler))
	big := bytes.Repeat([]byte("x"), 16<<20) // far more than the sockets' buffers
	addr := serve(t, d, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(big)
			return
		}
		w.Header().Set("X-Kept", "yes")
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintln(w, "ok")
	}))
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if _, err := stuck.Write([]byte("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // its handler has run; its response is stuck in the sockets
	began := time.Now()
	// Unbuffered, it would wait for the stuck response's write timeout
	// (30 s); buffered, at most for the big response's turn to end.
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("a request while another client does not read its response: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Kept") != "yes" {
		t.Errorf("response %s, X-Kept %q: want 418 and the handler's header", resp.Status, resp.Header.Get("X-Kept"))
	}
	t.Logf("served in %s while a client did not read", time.Since(began))
	if n := d.lane.Waiting(); n != 0 {
		t.Errorf("%d waiting for the lane", n)
	}
}

// A buffered response says its length, unless it has no body.
func TestLanedResponseLength(t *testing.T) {
	t.Parallel()
	d := New(nil, Options{Web: webConfig("127.0.0.1:0")}, slog.New(slog.DiscardHandler))
	addr := serve(t, d, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Write(bytes.Repeat([]byte("y"), 5000))
	}))
	for path, want := range map[string]int64{"/": 5000, "/empty": 0} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ContentLength != want || len(resp.TransferEncoding) != 0 {
			t.Errorf("%s: Content-Length %d, Transfer-Encoding %v; want %d and none", path, resp.ContentLength, resp.TransferEncoding, want)
		}
	}
}
