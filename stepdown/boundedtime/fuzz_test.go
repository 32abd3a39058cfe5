package boundedtime

import (
	"testing"
	"time"
)

// FuzzReader feeds arbitrary segments to the reader: it must never panic,
// and whatever it accepts must be an interval (earliest <= latest).
func FuzzReader(f *testing.F) {
	f.Add(good().bytes(), int64(150))
	s := good()
	s.generation = 11
	f.Add(s.bytes(), int64(0))
	s = good()
	s.drift, s.bound = 999_999_999, 1<<62
	f.Add(s.bytes(), int64(1<<40))
	f.Fuzz(func(t *testing.T, b []byte, monoSec int64) {
		mem := make([]byte, Size)
		copy(mem, b)
		r, err := newReader("fuzz", mem, time.Now(), time.Duration(monoSec%(1<<33))*time.Second)
		if err != nil {
			return
		}
		e, l, st, err := r.Now()
		if err != nil {
			return
		}
		if l.Before(e) {
			t.Errorf("Now() = [%v, %v], latest before earliest (status %v)", e, l, st)
		}
		if st < StatusUnknown || st > StatusDisrupted {
			t.Errorf("Now() status %d is not a status", st)
		}
	})
}
