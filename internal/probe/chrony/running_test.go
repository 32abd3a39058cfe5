package chrony

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

func TestRunningConf(t *testing.T) {
	t.Parallel()
	const def = "/etc/chrony/chrony.conf"
	proc := func(procs map[string][2]string) fstest.MapFS {
		m := fstest.MapFS{"self/comm": {Data: []byte("clockwatch\n")}}
		for pid, p := range procs {
			m[pid+"/comm"] = &fstest.MapFile{Data: []byte(p[0] + "\n")}
			m[pid+"/cmdline"] = &fstest.MapFile{Data: []byte(p[1])}
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		pidFile     string
		procs       map[string][2]string
		wantPath    string
		wantRunning bool
	}{
		{"no chronyd", "", map[string][2]string{"1": {"init", "/sbin/init\x00"}}, "", false},
		{"stock chronyd: the default file", "", map[string][2]string{"812": {"chronyd", "/usr/sbin/chronyd\x00-F\x001\x00"}}, def, true},
		{"-f FILE", "", map[string][2]string{"812": {"chronyd", "/usr/sbin/chronyd\x00-f\x00/srv/chrony.conf\x00-x\x00"}}, "/srv/chrony.conf", true},
		{"-fFILE", "", map[string][2]string{"812": {"chronyd", "chronyd\x00-f/srv/c.conf\x00"}}, "/srv/c.conf", true},
		{"the last -f wins", "", map[string][2]string{"812": {"chronyd", "chronyd\x00-f\x00/a\x00-f\x00/b\x00"}}, "/b", true},
		{"after --, not an option", "", map[string][2]string{"812": {"chronyd", "chronyd\x00--\x00-f\x00/a\x00"}}, def, true},
		{"the lowest PID of several", "", map[string][2]string{
			"4242": {"chronyd", "chronyd\x00-f\x00/tmp/test.conf\x00"},
			"812":  {"chronyd", "/usr/sbin/chronyd\x00"},
		}, def, true},
		{"the PID file's chronyd first", writePIDFile(t, "4242"), map[string][2]string{
			"4242": {"chronyd", "chronyd\x00-f\x00/tmp/test.conf\x00"},
			"812":  {"chronyd", "/usr/sbin/chronyd\x00"},
		}, "/tmp/test.conf", true},
		{"a stale PID file", writePIDFile(t, "77"), map[string][2]string{"812": {"chronyd", "/usr/sbin/chronyd\x00"}}, def, true},
		{"a chronyc is not chronyd", "", map[string][2]string{"900": {"chronyc", "chronyc\x00-f\x00/x\x00"}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, running, err := RunningConf(proc(tc.procs), tc.pidFile, def)
			if err != nil || path != tc.wantPath || running != tc.wantRunning {
				t.Errorf("RunningConf = %q, %v, %v; want %q, %v", path, running, err, tc.wantPath, tc.wantRunning)
			}
		})
	}
}

func writePIDFile(t *testing.T, pid string) string {
	p := filepath.Join(t.TempDir(), "chronyd.pid")
	if err := os.WriteFile(p, []byte(pid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A real chronyd started with -f: RunningConf reads /proc and finds its
// file, the one status must audit.
func TestRunningConfOfRealChronyd(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	c := chronydtest.Start(t, chronydtest.Options{})
	path, running, err := RunningConf(os.DirFS("/proc"), filepath.Join(c.Dir, "chronyd.pid"), "/etc/chrony/chrony.conf")
	if err != nil || !running || path != c.Conf {
		t.Errorf("RunningConf = %q, %v, %v; want chronyd's -f %s", path, running, err, c.Conf)
	}
}
