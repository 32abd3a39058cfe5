package ntpd_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
)

// rss is the process's resident set, from /proc/self/status.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestFragmentFloodOverUDP: a fake ntpd on loopback answers the first
// request with 50,000 "more" fragments of 468 octets, within one 300 ms
// timeout. The old reassembly kept them all (RSS from 19 to 62 MB, issue 24
// item 8); the reply is now refused at 32 KiB.
//
// Not parallel: it measures the process.
func TestFragmentFloodOverUDP(t *testing.T) {
	data := make([]byte, 468)
	flood := make([][]byte, 50000)
	for i := range flood {
		flood[i] = ntptest.Mode6Fragment(1, 0, 0, (i*468)%65000, true, data)
	}
	f, err := ntptest.StartMode6("127.0.0.1:0", func(ntptest.Mode6Request) [][]byte { return flood })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c := ntpd.NewClient(f.Addr(), 300*time.Millisecond)
	defer c.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rss0 := rss(t)
	_, err = c.Poll(context.Background())
	runtime.ReadMemStats(&after)
	rss1 := rss(t)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("fragment flood: poll error %v; allocated %.1f MB, RSS %.1f -> %.1f MB", err, float64(alloc)/1e6, float64(rss0)/1e6, float64(rss1)/1e6)
	if err == nil {
		t.Error("the flood was taken for a reply")
	}
	if alloc > 4<<20 {
		t.Errorf("the flood made the client allocate %.1f MB, want under 4 MiB", float64(alloc)/1e6)
	}
}

// TestManyAssociations: a READSTAT in several fragments lost all but the
// last fragment's associations (300 configured, 68 seen; issue 24 item 3):
// a fake ntpd on loopback with 300 associations, fragmented as ntpd does.
func TestManyAssociations(t *testing.T) {
	t.Parallel()
	f, err := ntptest.StartMode6("127.0.0.1:0", ntptest.NewNtpd(300, ntptest.SyncedSystem).Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c := ntpd.NewClient(f.Addr(), time.Second)
	defer c.Close()
	d, err := c.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Peers) != 300 || d.Peers[0].Selection != "sys.peer" || d.Peers[299].AssociationID != 300 {
		t.Errorf("%d associations (first %+v), want 300", len(d.Peers), d.Peers[:min(1, len(d.Peers))])
	}
}
