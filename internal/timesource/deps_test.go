package timesource_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/clockwatch/clockwatch/"

// judgeDeps is, for each judge, every package of this repository it may
// depend on (`go list -deps`, itself included), relative to the module
// path: health and the stepdown policy judge readings, and the announcer
// runs the policy, so none of them may depend on a source package
// (internal/probe/...: chrony, ntpd, ptp, sntp, timesyncd, vmclock and those
// to come) or on the configuration (which imports every source), directly
// or through any other package. The kernel is a source too: health takes
// its facts as data (internal/kernel), never internal/hostclock, which reads
// the host, nor internal/timesources, where the kernel is registered. stepdown is the public client module (the wire format); host gives
// the announcer CLOCK_MONOTONIC and the boot id its persisted state is
// keyed by. A package not listed here fails the test: add it only if it
// reads no source and no configuration.
func judgeDeps() map[string][]string {
	return map[string][]string{
		"internal/health":   {"internal/health", "internal/kernel", "internal/policy", "internal/timesource", "stepdown"},
		"internal/policy":   {"internal/policy", "internal/timesource", "stepdown"},
		"internal/announce": {"internal/announce", "internal/host", "internal/policy", "internal/safefile", "internal/timesource", "stepdown"},
	}
}

// TestJudgesDependOnlyOnTheirAllowList checks the contract's point by
// construction: each judge depends on the packages of this repository its
// allow-list names and on no other, and the list names none it has stopped
// depending on (so that it stays the truth, not a ceiling).
func TestJudgesDependOnlyOnTheirAllowList(t *testing.T) {
	t.Parallel()
	for pkg, allowed := range judgeDeps() {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			deps := goListDeps(t, module+pkg)
			if len(deps) < 3 {
				t.Fatalf("go list -deps %s lists %d packages: %q", pkg, len(deps), deps)
			}
			extra, stale := checkDeps(deps, allowed)
			for _, d := range extra {
				t.Errorf("%s depends on %s (go list -deps), which its allow-list in deps_test.go does not name: a judge takes timesource readings and data only, never a source or the configuration", pkg, d)
			}
			for _, d := range stale {
				t.Errorf("%s no longer depends on %s (go list -deps): remove it from its allow-list in deps_test.go", pkg, d)
			}
		})
	}
}

// TestDependencyCheckSeesIndirectImports: the check above, given health's
// allow-list, fails on the daemon, and names a source that comes in
// indirectly (the daemon imports the configuration, which imports every
// source) and the host's clock readers; so it could fail.
func TestDependencyCheckSeesIndirectImports(t *testing.T) {
	t.Parallel()
	extra, _ := checkDeps(goListDeps(t, module+"internal/daemon"), judgeDeps()["internal/health"])
	for _, want := range []string{"internal/config", "internal/probe/chrony", "internal/hostclock"} {
		if !slices.Contains(extra, want) {
			t.Errorf("the check of internal/daemon against health's allow-list does not name %s; it names %q", want, extra)
		}
	}
}

// checkDeps returns the packages of this repository in deps (full import
// paths) that allowed (relative to the module path) does not name, and the
// entries of allowed that deps lacks, both relative to the module path.
func checkDeps(deps, allowed []string) (extra, stale []string) {
	var ours []string
	for _, d := range deps {
		if rel, ok := strings.CutPrefix(d, module); ok {
			ours = append(ours, rel)
			if !slices.Contains(allowed, rel) {
				extra = append(extra, rel)
			}
		}
	}
	for _, a := range allowed {
		if !slices.Contains(ours, a) {
			stale = append(stale, a)
		}
	}
	return extra, stale
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
