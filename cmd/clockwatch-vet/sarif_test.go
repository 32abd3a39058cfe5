package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSARIF runs -sarif on a module with one fixable finding, one without a
// fix and one of the lower-severity category, and reads the SARIF back.
func TestSARIF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/lease\n\ngo 1.26\n")
	write("lease.go", `package lease

import "time"

type lease struct{ renewedAt, expiresAt int64 }

func elapsed(start time.Time) int64 {
	return time.Now().Unix() - start.Unix()
}

func callElapsed() int64 { return elapsed(time.Now()) }

func (l *lease) renew(ttl int64) {
	l.renewedAt = time.Now().Unix()
	l.expiresAt = l.renewedAt + ttl
}

func (l *lease) expired() bool { return time.Now().Unix() > l.expiresAt }

func (l *lease) stale() bool { return l.renewedAt >= l.expiresAt }
`)
	var out, errOut bytes.Buffer
	if code := runSARIF([]string{"-sarif", "./..."}, dir, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr: %s", code, errOut.String())
	}
	var log sarifLog
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "clockwatch-vet" {
		t.Fatalf("header: version %q, %d runs", log.Version, len(log.Runs))
	}
	type got struct {
		rule, level, uri string
		line, fixes      int
	}
	var gots []got
	for _, r := range log.Runs[0].Results {
		p := r.Locations[0].PhysicalLocation
		gots = append(gots, got{r.RuleID, r.Level, p.ArtifactLocation.URI, p.Region.StartLine, len(r.Fixes)})
	}
	want := []got{
		{"wallclock", "error", "lease.go", 8, 1},
		{"wallclock", "error", "lease.go", 18, 0},
		{"wallclock-ambiguous", "note", "lease.go", 20, 0},
	}
	if len(gots) != len(want) {
		t.Fatalf("results = %+v, want %+v", gots, want)
	}
	for i := range want {
		if gots[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, gots[i], want[i])
		}
	}
	if fix := log.Runs[0].Results[0].Fixes; len(fix) == 1 {
		if text := fix[0].Changes[0].Replacements[0].Inserted.Text; text != "int64(time.Since(start) / time.Second)" {
			t.Errorf("fix inserts %q", text)
		}
	}
}

func TestWantsSARIF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"./..."}, false},
		{[]string{"-sarif", "./..."}, true},
		{[]string{"--sarif=true", "./..."}, true},
		{[]string{"--", "-sarif"}, false},
	} {
		if got := wantsSARIF(tc.args); got != tc.want {
			t.Errorf("wantsSARIF(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
