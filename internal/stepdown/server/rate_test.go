package server

import (
	"testing"
	"time"
)

// TestConnectRate: a uid's burst, its refill, the refusal said once a
// second and dropped in between, and uids apart.
func TestConnectRate(t *testing.T) {
	t.Parallel()
	r := connectRate{buckets: map[uint32]*bucket{}}
	t0 := time.Unix(1_700_000_000, 0)
	for i := range connectBurst {
		if v := r.take(1000, t0); v != rateAdmit {
			t.Fatalf("connection %d of the burst: %v, want admitted", i+1, v)
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
		if v := r.take(s.uid, t0.Add(s.at)); v != s.want {
			t.Errorf("%s: %v, want %v", s.what, v, s.want)
		}
	}
	// Spent again more than a second after the refusal: told again.
	t1 := t0.Add(time.Second + 100*time.Millisecond)
	v := r.take(1000, t1)
	for v == rateAdmit {
		v = r.take(1000, t1)
	}
	if v != rateRefuse {
		t.Errorf("spent, a second after the last refusal: %v, want told why", v)
	}
	// Idle long enough, the bucket is full again.
	later := t1.Add(time.Duration(connectBurst/connectPerSecond+1) * time.Second)
	for i := range connectBurst {
		if v := r.take(1000, later); v != rateAdmit {
			t.Fatalf("after a rest, connection %d: %v", i+1, v)
		}
	}
}

// TestConnectRateForgets: past maxBuckets, the full buckets are forgotten
// and a spent one is kept.
func TestConnectRateForgets(t *testing.T) {
	t.Parallel()
	r := connectRate{buckets: map[uint32]*bucket{}}
	t0 := time.Unix(1_700_000_000, 0)
	for range connectBurst + 1 {
		r.take(7, t0)
	}
	for uid := range uint32(maxBuckets + 10) {
		r.take(uid+100, t0)
	}
	if len(r.buckets) > maxBuckets+1 {
		t.Errorf("%d buckets, want at most %d", len(r.buckets), maxBuckets+1)
	}
	if v := r.take(7, t0); v == rateAdmit {
		t.Errorf("the spent uid was forgotten: admitted again at once")
	}
}
