package packaging_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// lintDeb runs lintian on the .deb and says what is wrong, "" when nothing:
// no error, warning or unused override may be left (the tags kept are
// justified in packaging/lintian-overrides, which the package installs where
// lintian reads it).
func lintDeb(lintian, deb string) (problems, log string) {
	cmd := exec.Command(lintian, "--display-info", "--tag-display-limit", "0", "--fail-on", "error,warning", deb)
	out, err := cmd.CombinedOutput()
	var tags []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") || strings.Contains(line, "unused-override") ||
			strings.Contains(line, "mismatched-override") {
			tags = append(tags, strings.TrimSpace(line))
		}
	}
	if err != nil || len(tags) > 0 {
		return fmt.Sprintf("lintian (%v): fix, or justify in packaging/lintian-overrides:\n%s", err, strings.Join(tags, "\n")), string(out)
	}
	return "", string(out)
}

// lintRPM runs scripts/rpmlint.sh on the .rpm (rpmlint with
// packaging/rpmlint.toml, whose filters justify the findings kept: none may be
// left), the command docs/install.md gives users.
//
// rpmlint unpacks the package with `rpm2cpio | cpio -id` in a temporary
// directory, but nfpm's payload names files by absolute path (/usr/bin/...)
// and GNU cpio extracts absolute names where they say: rpmlint 2.4 wrote the
// package onto this machine's / (seen on a fresh machine, where the host
// check caught /etc/clockwatch appearing), and linted an empty directory.
// The script puts a cpio first in rpmlint's PATH that adds
// --no-absolute-filenames, so the files land in rpmlint's directory and are
// linted there (TestRPMLintScriptKeepsHostClean), and HOME and TMPDIR in a
// throwaway directory keep the rpm database and the spelling dictionary it
// creates off the host's /root.
func lintRPM(rpm string) (problems, log string) {
	out, err := exec.Command("../scripts/rpmlint.sh", rpm).CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0 errors, 0 warnings") {
		return fmt.Sprintf("rpmlint (%v): fix, or justify in packaging/rpmlint.toml:\n%s", err, out), string(out)
	}
	return "", string(out)
}

// TestRPMLintScriptKeepsHostClean builds a small .rpm with nfpm, whose
// payload names its one file by absolute path as clockwatch's does, and lints
// it with scripts/rpmlint.sh: the file must not appear on this machine, and
// rpmlint must have linted it (an empty file: rpmlint names it). A plain
// `rpmlint FILE.rpm` extracts it onto / instead (packaging/lint_test.go's
// lintRPM says how it was seen), so this test never runs that.
func TestRPMLintScriptKeepsHostClean(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "rpmlint")
	testtool.Require(t, "cpio")
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	nfpm := testtool.Require(t, "nfpm", filepath.Join(strings.TrimSpace(string(gopath)), "bin"))
	dir := t.TempDir()
	probe := filepath.Join("/usr/share", "clockwatch-rpmlint-probe-"+filepath.Base(filepath.Dir(dir)))
	t.Cleanup(func() {
		if _, err := os.Stat(probe); err == nil {
			os.RemoveAll(probe)
			t.Errorf("%s appeared on this machine: the .rpm was extracted onto /", probe)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("name: clockwatch-rpmlint-probe\nversion: 1.0.0\narch: noarch\nlicense: Apache-2.0\nmaintainer: clockwatch <clockwatch@example.org>\ndescription: probe\ncontents:\n  - src: %s\n    dst: %s/empty\n",
		filepath.Join(dir, "empty"), probe)
	if err := os.WriteFile(filepath.Join(dir, "nfpm.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	rpm := filepath.Join(dir, "probe.rpm")
	if out, err := exec.Command(nfpm, "package", "-f", filepath.Join(dir, "nfpm.yaml"), "-p", "rpm", "-t", rpm).CombinedOutput(); err != nil {
		t.Fatalf("nfpm: %v\n%s", err, out)
	}
	out, _ := exec.Command("../scripts/rpmlint.sh", rpm).CombinedOutput() // the probe has findings: rpmlint exits 1
	t.Logf("scripts/rpmlint.sh:\n%s", out)
	if !strings.Contains(string(out), "1 packages and 0 specfiles checked") {
		t.Errorf("rpmlint did not check the package")
	}
	if !strings.Contains(string(out), "zero-length "+probe+"/empty") {
		t.Errorf("rpmlint did not lint the payload (no zero-length finding for %s/empty): it was not extracted where rpmlint looks", probe)
	}
	if _, err := os.Stat(probe); err == nil {
		t.Errorf("%s is on this machine after scripts/rpmlint.sh", probe)
	}
}
