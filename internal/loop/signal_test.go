package loop

import "testing"

// received reports whether c has a value waiting.
func received(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestSignal(t *testing.T) {
	t.Parallel()
	var a, b Signal
	merged := Merge(&a, nil, &b)
	own := b.Listen()
	if received(merged) || received(own) {
		t.Fatal("a value before any Notify")
	}
	for _, tc := range []struct {
		name          string
		notify        func()
		merged, alone bool
	}{
		{"the first signal", a.Notify, true, false},
		{"the second signal", b.Notify, true, true},
		{"both, coalesced", func() { a.Notify(); b.Notify(); b.Notify() }, true, true},
		{"nothing", func() {}, false, false},
	} {
		tc.notify()
		if got := received(merged); got != tc.merged {
			t.Errorf("%s: merged channel received %v, want %v", tc.name, got, tc.merged)
		}
		if got := received(own); got != tc.alone {
			t.Errorf("%s: b's own listener received %v, want %v", tc.name, got, tc.alone)
		}
		if received(merged) || received(own) {
			t.Errorf("%s: more than one value waits", tc.name)
		}
	}
	if Merge() != nil || Merge(nil) != nil {
		t.Error("Merge of no signal: want nil (a select on it blocks)")
	}
}
