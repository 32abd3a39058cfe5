package timesyncd

import (
	"context"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestStatusLines(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	t1 := now.Add(-10 * time.Second).UnixMicro()
	synced := Snapshot{
		Props: Properties{ServerName: "ntp.example", ServerAddress: netip.MustParseAddr("192.0.2.1"),
			PollInterval: 64 * time.Second, Frequency: -12e-6,
			Message: NTPMessage{Version: 4, Mode: 4, Stratum: 2, Precision: -20, RootDelay: 4 * time.Millisecond,
				RootDispersion: time.Millisecond, RefID: [4]byte{198, 51, 100, 7},
				Origin: t1, Receive: t1 + 6000, Transmit: t1 + 8000, Destination: t1 + 10000, PacketCount: 12}},
		HaveData: true, Found: true, Tally: loop.Tally{Up: true, LastSuccess: now.Add(-time.Second), Polls: 3}, SampleSeen: now.Add(-10 * time.Second),
	}
	lost := synced
	lost.Up, lost.Err = false, errors.New("systemd-timesyncd is not on the bus: nobody owns org.freedesktop.timesync1")
	lost.SampleSeen, lost.LastSuccess = now.Add(-5*time.Minute), now.Add(-4*time.Minute)
	stepped := synced
	stepped.Props.Message.Receive -= 12_400_000
	stepped.Props.Message.Transmit -= 12_400_000
	pinned := Snapshot{Pinned: true, Found: true, Tally: loop.Tally{Polls: 1, Err: errors.New("systemd-timesyncd is not on the bus: no system bus at /run/dbus/system_bus_socket")}}
	var b strings.Builder
	for _, tc := range []struct {
		name string
		s    Snapshot
	}{
		{"synchronised", synced},
		{"stepped", stepped},
		{"lost", lost},
		{"pinned, absent", pinned},
		{"absent", Snapshot{Tally: loop.Tally{Polls: 1, Err: ErrAbsent}}},
		{"no reply yet", Snapshot{Found: true, Tally: loop.Tally{Up: true, Polls: 1}, Props: Properties{ServerName: "ntp.example"}}},
	} {
		b.WriteString("# " + tc.name + "\n")
		for _, l := range Lines(tc.s, now) {
			b.WriteString(l.String() + "\n")
		}
	}
	golden := filepath.Join("testdata", "status.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("status lines differ from %s (-want +got):\n%s", golden, diff)
	}
}

func TestStatusOnceWithoutTimesyncd(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Address = "unix:path=" + t.TempDir() + "/no-bus"
	host := timesource.Host{Now: time.Now()}
	if st, ok := StatusOnce(context.Background(), cfg, host); ok || st.Lines != nil {
		t.Errorf("StatusOnce without timesyncd = %q, %v, want no lines", st.Lines, ok)
	}
	cfg.Mode = ModeOn
	if st, ok := StatusOnce(context.Background(), cfg, host); !ok || len(st.Lines) != 1 || !strings.Contains(st.Lines[0].Value, "no system bus at") || st.Reading.IsAbsent() {
		t.Errorf("StatusOnce pinned without a bus = %q, want one line saying so", st.Lines)
	}
}
