package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPutTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    time.Time
		want uint64
	}{
		{time.Unix(0, 0), uint64(ntpEpochOffset) << 32},
		{time.Unix(1, 500_000_000), uint64(ntpEpochOffset+1)<<32 | 1<<31},
	}
	for _, tt := range tests {
		var b [8]byte
		putTime(b[:], tt.t)
		if got := binary.BigEndian.Uint64(b[:]); got != tt.want {
			t.Errorf("putTime(%v) = %#x, want %#x", tt.t, got, tt.want)
		}
	}
}

func TestReadOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		want    time.Duration
		wantErr bool
	}{
		{name: "no file given", path: ""},
		{name: "missing file", path: filepath.Join(dir, "none")},
		{name: "empty", path: write("empty", "")},
		{name: "negative with newline", path: write("neg", "-12.4s\n"), want: -12400 * time.Millisecond},
		{name: "garbage", path: write("bad", "soon"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readOffset(tt.path)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("readOffset() = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
