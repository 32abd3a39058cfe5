package kernel

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  RawTimex
		want Timex
	}{
		{
			name: "chrony-synchronised, microsecond offsets",
			raw: RawTimex{Offset: -1234, Freq: -1_310_720, MaxError: 4500, EstError: 12, Status: StatusPLL,
				Constant: 2, Precision: 1, Tolerance: 32768000, Tick: 10000, TAI: 37, State: int(TimeOK)},
			want: Timex{Offset: -1234 * time.Microsecond, Frequency: -20e-6, MaxError: 4500 * time.Microsecond,
				EstError: 12 * time.Microsecond, Status: StatusPLL, Constant: 2, Precision: time.Microsecond,
				Tolerance: 500e-6, Tick: 10 * time.Millisecond, TAI: 37 * time.Second, State: TimeOK},
		},
		{
			name: "STA_NANO offsets are nanoseconds",
			raw:  RawTimex{Offset: 250_000, Status: StatusPLL | StatusNano, State: int(TimeOK)},
			want: Timex{Offset: 250 * time.Microsecond, Status: StatusPLL | StatusNano, State: TimeOK},
		},
		{
			name: "unsynchronised, maxerror saturated",
			raw:  RawTimex{MaxError: 16_000_000, Status: StatusUnsync, State: int(TimeError)},
			want: Timex{MaxError: MaxErrorSaturated, Status: StatusUnsync, State: TimeError},
		},
		{
			name: "the KVM 2^32 ns artifact is dropped and flagged",
			raw:  RawTimex{Offset: 1 << 32, Status: StatusNano, State: int(TimeOK)},
			want: Timex{Status: StatusNano, State: TimeOK, Artifact: true},
		},
		{
			name: "a negative impossible offset in microseconds is an artifact too",
			raw:  RawTimex{Offset: -600_000, State: int(TimeOK)},
			want: Timex{Artifact: true},
		},
		{
			name: "the largest offset the PLL holds is real",
			raw:  RawTimex{Offset: -500_000, State: int(TimeOK)},
			want: Timex{Offset: -500 * time.Millisecond},
		},
		{
			name: "leap second insertion pending",
			raw:  RawTimex{Status: StatusPLL | StatusInsert, State: int(TimeIns)},
			want: Timex{Status: StatusPLL | StatusInsert, State: TimeIns},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Decode(tt.raw)); diff != "" {
				t.Errorf("Decode() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTimexJudgements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tx     Timex
		synced bool
		leap   int
	}{
		{"ok", Timex{Status: StatusPLL, State: TimeOK}, true, 0},
		{"unsync bit", Timex{Status: StatusUnsync, State: TimeOK}, false, 0},
		{"time error state", Timex{State: TimeError}, false, 0},
		{"insert", Timex{Status: StatusInsert, State: TimeIns}, true, 1},
		{"delete", Timex{Status: StatusDelete, State: TimeDel}, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.tx.Synchronized(); got != tt.synced {
				t.Errorf("Synchronized() = %v, want %v", got, tt.synced)
			}
			if got := tt.tx.LeapPending(); got != tt.leap {
				t.Errorf("LeapPending() = %d, want %d", got, tt.leap)
			}
		})
	}
}

func TestClockStateString(t *testing.T) {
	t.Parallel()
	want := []string{"TIME_OK", "TIME_INS", "TIME_DEL", "TIME_OOP", "TIME_WAIT", "TIME_ERROR", "TIME_UNKNOWN(6)"}
	var got []string
	for s := TimeOK; s <= TimeError+1; s++ {
		got = append(got, s.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("String() mismatch (-want +got):\n%s", diff)
	}
}
