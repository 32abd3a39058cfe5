package timesource_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/clockwatch/clockwatch/"

// TestJudgesDependOnNoSource checks the contract's point by construction:
// health and the stepdown policy judge readings, and the announcer runs the
// policy, so none of them depends on a source package (internal/probe/...:
// chrony, ntpd, ptp, sntp, timesyncd, vmclock and those to come) or on the
// configuration (which imports every source), directly or through any
// other package: `go list -deps`, not the direct imports. The kernel is a
// source too: health takes its facts as data (internal/kernel), never
// internal/probe, which reads the host.
func TestJudgesDependOnNoSource(t *testing.T) {
	t.Parallel()
	judges := []string{"internal/health", "internal/policy", "internal/announce"}
	for _, pkg := range judges {
		deps := goListDeps(t, module+pkg)
		if len(deps) < 3 {
			t.Fatalf("go list -deps %s lists %d packages: %q", pkg, len(deps), deps)
		}
		for _, d := range deps {
			if d == module+"internal/probe" || strings.HasPrefix(d, module+"internal/probe/") || d == module+"internal/config" {
				t.Errorf("%s depends on %s (go list -deps): it must judge timesource readings only", pkg, d)
			}
		}
	}
}

// TestDependencyCheckSeesIndirectImports: the check above sees a source
// that comes in indirectly (the daemon imports the configuration, which
// imports every source); so it could fail.
func TestDependencyCheckSeesIndirectImports(t *testing.T) {
	t.Parallel()
	deps := strings.Join(goListDeps(t, module+"internal/daemon"), "\n")
	for _, want := range []string{module + "internal/config", module + "internal/probe/chrony"} {
		if !strings.Contains(deps, want+"\n") {
			t.Errorf("go list -deps internal/daemon does not list %s", want)
		}
	}
}

// goListDeps returns every package pkg depends on, itself included, as the
// go command builds it here.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to list dependencies with: %v", err)
		}
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
