package socket

import (
	"testing"
	"time"
)

// TestConnectRate: a uid's burst, spent only by admissions, its refill,
// the refusal said once a second and dropped in between, and uids apart.
// rateVerdict is what the accept loop does with a connection.
type rateVerdict int

const (
	rateAdmit  rateVerdict = iota // go on with admission
	rateRefuse                    // refuse, saying why
	rateDrop                      // refuse without a word
)

func TestConnectRate(t *testing.T) {
	t.Parallel()
	const burst = 100
	r := newConnectRate(burst)
	t0 := time.Unix(1_700_000_000, 0)
	// What admit does: admitted with a token, else told or dropped.
	admit := func(uid uint32, at time.Time) rateVerdict {
		switch {
		case r.has(uid, at):
			r.spend(uid)
			return rateAdmit
		case r.tell(uid, at):
			return rateRefuse
		}
		return rateDrop
	}
	for i := range burst {
		if v := admit(1000, t0); v != rateAdmit {
			t.Fatalf("connection %d of the burst: %v, want admitted", i+1, v)
		}
	}
	// Checked, never spent (refused by the share): no token goes.
	r2 := newConnectRate(burst)
	for range 10 * burst {
		if !r2.has(1000, t0) {
			t.Fatalf("checks without admissions: no token")
		}
	}
	steps := []struct {
		what string
		uid  uint32
		at   time.Duration
		want rateVerdict
	}{
		{"past the burst: told why", 1000, 0, rateRefuse},
		{"again at once: dropped", 1000, time.Millisecond, rateDrop},
		{"another uid: its own burst", 1001, time.Millisecond, rateAdmit},
		{"a token back after 1/connectPerSecond", 1000, time.Second * 3 / 2 / connectPerSecond, rateAdmit},
		{"and spent: dropped, told within the second", 1000, time.Second * 3 / 2 / connectPerSecond, rateDrop},
	}
	for _, s := range steps {
		if v := admit(s.uid, t0.Add(s.at)); v != s.want {
			t.Errorf("%s: %v, want %v", s.what, v, s.want)
		}
	}
	// Spent again more than a second after the refusal: told again.
	t1 := t0.Add(time.Second + 100*time.Millisecond)
	v := admit(1000, t1)
	for v == rateAdmit {
		v = admit(1000, t1)
	}
	if v != rateRefuse {
		t.Errorf("spent, a second after the last refusal: %v, want told why", v)
	}
	// Idle long enough, the bucket is full again.
	later := t1.Add(time.Duration(burst/connectPerSecond+1) * time.Second)
	for i := range burst {
		if v := admit(1000, later); v != rateAdmit {
			t.Fatalf("after a rest, connection %d: %v", i+1, v)
		}
	}
}

// TestConnectRateForgets: past maxBuckets, the buckets at least half full
// are forgotten and a spent one is kept.
func TestConnectRateForgets(t *testing.T) {
	t.Parallel()
	const burst = 100
	r := newConnectRate(burst)
	t0 := time.Unix(1_700_000_000, 0)
	for range burst {
		r.has(7, t0)
		r.spend(7)
	}
	for uid := range uint32(maxBuckets + 10) {
		r.has(uid+100, t0)
		r.spend(uid + 100)
	}
	if len(r.buckets) > maxBuckets+1 {
		t.Errorf("%d buckets, want at most %d", len(r.buckets), maxBuckets+1)
	}
	if r.has(7, t0) {
		t.Errorf("the spent uid was forgotten: admitted again at once")
	}
}
