package boundedtime

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// vmclockPage is a VMClock device's page with the given marker, as qemu 10
// fills it (magic, size, version 1, no counter, seq_count 4).
func vmclockPage(marker uint64) []byte {
	b := make([]byte, 4096)
	le := binary.LittleEndian
	le.PutUint32(b[0:], vmclockMagic)
	le.PutUint32(b[4:], 4096)
	le.PutUint16(b[8:], 1)
	b[10] = 0xff
	le.PutUint32(b[vmclockOffSeq:], 4)
	le.PutUint64(b[vmclockOffMarker:], marker)
	return b
}

// ClockBound's client (clock-bound-vmclock VMClock::now): with the flag,
// the status stands only while the device's marker is the segment's.
func TestNowComparesTheVMClockMarker(t *testing.T) {
	t.Parallel()
	mono, err := monotonic()
	if err != nil {
		t.Fatal(err)
	}
	seg := func(flag bool, marker uint64) string {
		s := good()
		s.asOf = [2]int64{int64(mono / time.Second), int64(mono % time.Second)}
		s.voidAfter = [2]int64{s.asOf[0] + 1000, 0}
		s.marker = marker
		if flag {
			s.support = 1
		}
		return writeFile(t, s.bytes())
	}
	for _, tc := range []struct {
		name    string
		flag    bool
		segment uint64
		device  []byte // nil: no device
		want    Status
	}{
		{"no flag, no device", false, 0, nil, StatusSynchronized},
		{"flag, same marker", true, 2, vmclockPage(2), StatusSynchronized},
		{"flag, the device moved on (migrated, not yet in the segment)", true, 1, vmclockPage(2), StatusUnknown},
		{"flag, no device", true, 2, nil, StatusUnknown},
		{"flag, not a VMClock page", true, 2, make([]byte, 4096), StatusUnknown},
		{"no flag: the device is not read", false, 1, vmclockPage(2), StatusSynchronized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "vmclock0")
			if tc.device != nil {
				if err := os.WriteFile(path, tc.device, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := OpenVMClock(seg(tc.flag, tc.segment), path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, _, st, err := r.Now()
			if err != nil || st != tc.want {
				t.Errorf("Now() status %v, %v; want %v", st, err, tc.want)
			}
			e, l, st2, err := r.NowNanos()
			//clockwatch:wallclock-ok l-e is the width of one bounded reading [earliest, latest], not an elapsed time
			if err != nil || st2 != tc.want || l-e < 20_000 || l-e > 21_000 {
				t.Errorf("NowNanos() = [%d, %d] %v, %v; want %v and a 20 µs interval", e, l, st2, err, tc.want)
			}
		})
	}
}

// The device's marker changes under a reader that already mapped it: the
// next Now sees it at once (a memory read, no reopening).
func TestNowSeesTheDeviceMove(t *testing.T) {
	t.Parallel()
	mono, err := monotonic()
	if err != nil {
		t.Fatal(err)
	}
	s := good()
	s.asOf = [2]int64{int64(mono / time.Second), int64(mono % time.Second)}
	s.voidAfter = [2]int64{s.asOf[0] + 1000, 0}
	s.marker, s.support = 1, 1
	dev := filepath.Join(t.TempDir(), "vmclock0")
	if err := os.WriteFile(dev, vmclockPage(1), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenVMClock(writeFile(t, s.bytes()), dev)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, st, _ := r.Now(); st != StatusSynchronized {
		t.Fatalf("before the move: %v", st)
	}
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, 2), vmclockOffMarker); err != nil {
		t.Fatal(err)
	}
	if _, _, st, _ := r.Now(); st != StatusUnknown {
		t.Errorf("after the device's marker moved to 2 (segment 1): %v, want unknown", st)
	}
}
