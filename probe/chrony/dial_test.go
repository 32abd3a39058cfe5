package chrony

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteBatch: sendmmsg delivers every datagram, in order, and waits
// while the receiver's queue (net.unix.max_dgram_qlen, 10 here by default)
// is full instead of dropping or failing.
func TestWriteBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "chronyd.sock"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	local := filepath.Join(dir, "reply.sock")
	lc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: local, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	c := &unixConn{UnixConn: lc, local: local, remote: srv.LocalAddr().(*net.UnixAddr)}
	defer c.Close()
	if err := c.connect(); err != nil {
		t.Fatal(err)
	}
	const n = 3 * replayQueueLen // more than the queue holds
	var batch [][]byte
	for i := range n {
		batch = append(batch, []byte(fmt.Sprintf("request %02d", i)))
	}
	got := make(chan []byte, n)
	go func() {
		time.Sleep(50 * time.Millisecond) // let the queue fill first
		buf := make([]byte, 64)
		for range n {
			m, err := srv.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- bytes.Clone(buf[:m])
		}
	}()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteBatch(batch); err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	for i := range n {
		if b := <-got; !bytes.Equal(b, batch[i]) {
			t.Fatalf("datagram %d: %q, want %q", i, b, batch[i])
		}
	}
	if err := c.WriteBatch([][]byte{{}}); err == nil {
		t.Error("an empty datagram was sent")
	}
}
