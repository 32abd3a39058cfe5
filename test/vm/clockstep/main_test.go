package main

// These tests cover clockstep's pure parts only. clockstep itself is never
// run on the machine the tests run on, not even to see it refuse.

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestParsePlans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    []plan
		wantErr string
	}{
		{name: "issue 3's steps", args: []string{"-12.4s", "+3600s", "setoffset:-0.25s"},
			want: []plan{{"settime", -12400 * time.Millisecond}, {"settime", time.Hour}, {"setoffset", -250 * time.Millisecond}}},
		{name: "method per step", args: []string{"settime:1ms", "setoffset:-8760h"},
			want: []plan{{"settime", time.Millisecond}, {"setoffset", -8760 * time.Hour}}},
		{name: "bad duration", args: []string{"12"}, wantErr: `step "12": time: missing unit in duration "12"`},
		{name: "bad method", args: []string{"adjtime:1s"}, wantErr: `step "adjtime:1s": unknown method "adjtime"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parsePlans(tt.args, "settime")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePlans() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(plan{})); diff != "" {
				t.Errorf("parsePlans() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOffsetTimeval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		delta time.Duration
		want  unix.Timeval
	}{
		{-250 * time.Millisecond, unix.Timeval{Sec: -1, Usec: 750_000_000}},
		{-12400 * time.Millisecond, unix.Timeval{Sec: -13, Usec: 600_000_000}},
		{-time.Second, unix.Timeval{Sec: -1, Usec: 0}},
		{time.Hour + time.Nanosecond, unix.Timeval{Sec: 3600, Usec: 1}},
		{-time.Nanosecond, unix.Timeval{Sec: -1, Usec: 999_999_999}},
	}
	for _, tt := range tests {
		if got := offsetTimeval(tt.delta); got != tt.want {
			t.Errorf("offsetTimeval(%v) = %+v, want %+v", tt.delta, got, tt.want)
		}
	}
}
