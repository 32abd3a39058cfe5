package chrony

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// status audits the chrony.conf chronyd runs, and none when chronyd does not
// run: the stock /etc/chrony/chrony.conf of a host without chronyd says
// nothing about its clock.
func TestAuditRunning(t *testing.T) {
	t.Parallel()
	conf, err := filepath.Abs("testdata/chrony.conf")
	if err != nil {
		t.Fatal(err)
	}
	none := fstest.MapFS{"1/comm": {Data: []byte("init\n")}, "1/cmdline": {Data: []byte("/sbin/init\x00")}}
	if got := auditRunning(none, "/etc/chrony/chrony.conf"); got != nil {
		t.Errorf("no chronyd running: findings %v, want none", got)
	}
	running := fstest.MapFS{"812/comm": {Data: []byte("chronyd\n")}, "812/cmdline": {Data: []byte("/usr/sbin/chronyd\x00-f\x00" + conf + "\x00")}}
	got := auditRunning(running, "/nonexistent/chrony.conf")
	var texts []string
	for _, f := range got {
		texts = append(texts, f.Text)
	}
	if len(got) == 0 || strings.Contains(strings.Join(texts, "\n"), "Cannot audit") {
		t.Errorf("chronyd runs with -f %s: findings %q, want that file's audit", conf, texts)
	}
	if got := auditRunning(running, ""); got != nil {
		t.Errorf("audit off (conf_path \"\"): findings %v, want none", got)
	}
}
