package vm

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func TestRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		console string
		want    []Record
		wantErr string
	}{
		{
			name: "results among kernel messages",
			console: "[    0.1] Linux version 6.1\nCW-BOOTED 2.0\n" +
				`CW-RESULT {"kind":"gap","gap_ns":1,"mono_ns":2}` + "\n" +
				"noise\n" +
				`[    2.5] random: crng init done CW-RESULT {"kind":"wake","n":1}` + "\n",
			want: []Record{
				{Kind: "gap", JSON: json.RawMessage(`{"kind":"gap","gap_ns":1,"mono_ns":2}`), Line: 3},
				{Kind: "wake", JSON: json.RawMessage(`{"kind":"wake","n":1}`), Line: 5},
			},
		},
		{name: "none", console: "CW-BOOTED 2.0\nCW-EXIT 0 2.1\n"},
		{name: "cut short", console: "CW-RESULT {\"kind\":\"gap\",\"ga\n", wantErr: "console line 1: bad result line"},
		{name: "no kind", console: "CW-RESULT {\"n\":1}\n", wantErr: "console line 1: bad result line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := (&Result{Console: tt.console}).Records()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Records() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Records() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	res := &Result{Console: `CW-RESULT {"kind":"wake","n":1,"delta_ns":-12400000000}
CW-RESULT {"kind":"gap","gap_ns":5}
CW-RESULT {"kind":"wake","n":2,"delta_ns":3600000000000}
`}
	got, err := Decode[guest.Wake](res, guest.KindWake)
	if err != nil {
		t.Fatal(err)
	}
	want := []guest.Wake{{N: 1, DeltaNS: -12400000000}, {N: 2, DeltaNS: 3600000000000}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode() mismatch (-want +got):\n%s", diff)
	}
	if _, err := Decode[guest.Wake](&Result{Console: `CW-RESULT {"kind":"wake","n":"one"}`}, guest.KindWake); err == nil {
		t.Error("Decode() of a bad field: no error")
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Summary
	}{
		{name: "empty"},
		{name: "one", in: ms(4), want: Summary{N: 1, Min: 4 * time.Millisecond, P50: 4 * time.Millisecond, P99: 4 * time.Millisecond, Max: 4 * time.Millisecond}},
		{name: "unsorted with a negative", in: ms(3, -1, 2, 10), want: Summary{N: 4, Min: -time.Millisecond, P50: 2 * time.Millisecond, P99: 10 * time.Millisecond, Max: 10 * time.Millisecond}},
		{name: "hundred", in: ms(seq(1, 100)...), want: Summary{N: 100, Min: time.Millisecond, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Summarize(tt.in)); diff != "" {
				t.Errorf("Summarize() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestStepsScript(t *testing.T) {
	t.Parallel()
	got := StepsScript(StandardSteps(), "cw_wait_content /tmp/wakes $CW_STEP")
	golden(t, "standard-steps.sh", []byte(got))
}

func TestMadeSteps(t *testing.T) {
	t.Parallel()
	steps := []Step{
		{Delta: -12400 * time.Millisecond, Method: "settime"},
		{Date: "2031-05-06 07:08:09"},
		{Delta: time.Millisecond, Method: "setoffset"},
	}
	tests := []struct {
		name    string
		console string
		want    []MadeStep
		wantErr string
	}{
		{
			name: "all made, a wake in between",
			console: `CW-RESULT {"kind":"wake","n":1}
CW-RESULT {"kind":"step","method":"settime","requested_ns":-12400000000,"applied_ns":-12400020000,"mono_before_set_ns":100,"mono_after_set_ns":30100}
CW-RESULT {"kind":"gap","gap_ns":1000,"mono_ns":5}
CW-RESULT {"kind":"gap","gap_ns":5000000001000,"mono_ns":6}
CW-RESULT {"kind":"step","method":"setoffset","requested_ns":1000000,"applied_ns":1000000,"mono_before_set_ns":700,"mono_after_set_ns":900}
`,
			want: []MadeStep{
				{Step: steps[0], Applied: -12400020 * time.Microsecond, CallStart: 100, CallReturn: 30100},
				{Step: steps[1], Applied: 5000 * time.Second},
				{Step: steps[2], Applied: time.Millisecond, CallStart: 700, CallReturn: 900},
			},
		},
		{
			name: "settime short by more than the call took",
			console: `CW-RESULT {"kind":"step","method":"settime","requested_ns":-12400000000,"applied_ns":-12390000000,"mono_before_set_ns":100,"mono_after_set_ns":30100}
`,
			wantErr: "step 1 (settime -12.4s): console line 1: clockstep applied -12.39s, asked for -12.4s ± 1.03ms",
		},
		{
			name: "date -s without gap readings",
			console: `CW-RESULT {"kind":"step","method":"settime","requested_ns":-12400000000,"applied_ns":-12400000000,"mono_before_set_ns":100,"mono_after_set_ns":200}
CW-RESULT {"kind":"step","method":"setoffset","requested_ns":1000000,"applied_ns":1000000,"mono_before_set_ns":700,"mono_after_set_ns":900}
`,
			wantErr: `step 2 (date -s "2031-05-06 07:08:09"): want two gap readings around date -s`,
		},
		{
			name:    "wrong step",
			console: `CW-RESULT {"kind":"step","method":"settime","requested_ns":1,"applied_ns":1,"mono_before_set_ns":100,"mono_after_set_ns":200}`,
			wantErr: "clockstep did settime 1ns",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := MadeSteps(&Result{Console: tt.console}, steps)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("MadeSteps() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MadeSteps() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
