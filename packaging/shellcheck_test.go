package packaging_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// TestShellcheck lints the shell this area ships or runs: the maintainer
// scripts (POSIX sh: dpkg and rpm run them with /bin/sh) and the bash build
// and test scripts.
func TestShellcheck(t *testing.T) {
	t.Parallel()
	shellcheck := testtool.Require(t, "shellcheck")
	maintainer, err := filepath.Glob("scripts/*.sh")
	if err != nil || len(maintainer) == 0 {
		t.Fatalf("no maintainer scripts found (%v)", err)
	}
	for _, c := range []struct {
		shell string
		files []string
	}{
		{"sh", maintainer},
		{"bash", []string{
			"../scripts/package.sh",
			"../scripts/rpmlint.sh",
			"../scripts/deps.d/80-pkg.sh",
			"../test/systemdvm/mkroot.sh",
			"../test/systemdvm/testdata/clockwatch-vmtest",
			"../test/systemdvm/testdata/clockwatch-vmtest-restarts",
			"../test/systemdvm/testdata/clockwatch-vmtest-vmclock",
		}},
	} {
		out, err := exec.Command(shellcheck, append([]string{"--shell=" + c.shell}, c.files...)...).CombinedOutput()
		if err != nil {
			t.Errorf("shellcheck --shell=%s: %v\n%s", c.shell, err, out)
		}
	}
}
