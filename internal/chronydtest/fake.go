package chronydtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Fake is a chronyd that speaks the command protocol on a unix datagram
// socket and answers each request with a reply the test gives: bytes
// captured from a real chronyd (internal/probe/chrony/testdata) or made by
// hand, keyed as those files are named ("tracking", "n_sources",
// "source_data_3", "sourcename_127.0.0.11"). It copies the request's
// sequence number into the reply and does nothing else, so a test can make
// it say anything: a root dispersion of 1e10 s, a negative delay, garbage.
// A request without a reply is ignored, as chronyd ignores what it cannot
// serve.
type Fake struct {
	// Socket is the command socket's path (chrony.address).
	Socket string

	conn *net.UnixConn
	mu   sync.Mutex
	rep  map[string][]byte
	reqs int
	wg   sync.WaitGroup
}

// LoadReplies reads every <key>.bin of a directory of captured replies.
func LoadReplies(dir string) (map[string][]byte, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	m := map[string][]byte{}
	for _, e := range es {
		key, ok := strings.CutSuffix(e.Name(), ".bin")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		m[key] = b
	}
	return m, nil
}

// StartFake listens in a new directory of the test (mode 0700, as chronyd
// wants its own) and answers with replies until the test ends.
func StartFake(t testing.TB, replies map[string][]byte) *Fake {
	t.Helper()
	dir, err := os.MkdirTemp("", "fakechronyd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "chronyd.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatalf("fake chronyd: %v", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	f := &Fake{Socket: path, conn: c, rep: map[string][]byte{}}
	for k, v := range replies {
		f.rep[k] = append([]byte(nil), v...)
	}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() {
		c.Close()
		f.wg.Wait()
	})
	return f
}

// Set replaces the reply to key from the next request on.
func (f *Fake) Set(key string, reply []byte) {
	f.mu.Lock()
	f.rep[key] = append([]byte(nil), reply...)
	f.mu.Unlock()
}

// Edit changes the reply to key in place under the fake's lock.
func (f *Fake) Edit(key string, edit func(reply []byte)) {
	f.mu.Lock()
	edit(f.rep[key])
	f.mu.Unlock()
}

// Requests counts the requests received.
func (f *Fake) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs
}

func (f *Fake) serve() {
	defer f.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := f.conn.ReadFromUnix(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < 20 || from == nil {
			continue
		}
		key := RequestKey(buf[:n])
		f.mu.Lock()
		f.reqs++
		b, ok := f.rep[key]
		b = append([]byte(nil), b...)
		f.mu.Unlock()
		if !ok {
			continue
		}
		if len(b) >= 20 {
			copy(b[16:20], buf[8:12]) // the request's sequence number
		}
		f.conn.WriteToUnix(b, from)
	}
}

// RequestKey names a request as the captured replies are named.
func RequestKey(p []byte) string {
	cmd := binary.BigEndian.Uint16(p[4:6])
	arg := p[20:]
	switch cmd {
	case 33:
		return "tracking"
	case 14:
		return "n_sources"
	case 44:
		return "activity"
	case 15, 34:
		if len(arg) < 4 {
			break
		}
		name := map[uint16]string{15: "source_data", 34: "sourcestats"}[cmd]
		return fmt.Sprintf("%s_%d", name, int32(binary.BigEndian.Uint32(arg)))
	case 65:
		if len(arg) < 18 {
			break
		}
		ip := net.IP(arg[:16])
		if binary.BigEndian.Uint16(arg[16:18]) == 1 {
			ip = net.IP(arg[:4])
		}
		return "sourcename_" + ip.String()
	}
	return fmt.Sprintf("command_%d", cmd)
}

// Offsets of the tracking reply's figures (chrony's RPY_Tracking after the
// 28-octet reply header), for Float.
const (
	// TrackingRefTime is the reference time: seconds' high and low 32
	// bits, then nanoseconds (chrony's Timespec).
	TrackingRefTime           = 56
	TrackingCurrentCorrection = 68
	TrackingRMSOffset         = 76
	TrackingRootDelay         = 92
	TrackingRootDispersion    = 96
)

// MaxFloat is the largest figure chrony's float can carry, about 4.6e18.
const MaxFloat = float64(1<<24-1) * (1 << 38)

// Float writes v at off in chrony's 32-bit float (a 7-bit exponent and a
// 25-bit coefficient: coef × 2^(exp−25)), saturating at ±MaxFloat.
func Float(b []byte, off int, v float64) {
	binary.BigEndian.PutUint32(b[off:], EncodeFloat(v))
}

// EncodeFloat is chrony's UTI_FloatHostToNetwork.
func EncodeFloat(v float64) uint32 {
	const coefBits, expMin, expMax = 25, -64, 63
	var exp int
	if v != 0 && !math.IsNaN(v) {
		_, e := math.Frexp(math.Abs(v)) // |v| = frac × 2^e, frac in [0.5, 1)
		exp = max(expMin, min(e+1, expMax))
	}
	coef := math.Round(v * math.Pow(2, float64(coefBits-exp)))
	limit := float64(int64(1) << (coefBits - 1))
	coef = max(-limit, min(coef, limit-1))
	return uint32(exp)<<coefBits | uint32(int32(coef))&(1<<coefBits-1)
}
