package testtool

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where a missing tool
// is a failure rather than a reason to skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require returns the path of the named tool. When it is missing the test
// fails under CI and is skipped elsewhere, with a message naming the install
// script that provides it.
func Require(t testing.TB, name string, extraDirs ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range append(extraDirs, "/usr/sbin", "/sbin", "/usr/local/sbin") {
		p := d + "/" + name
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	Missing(t, name+" not found; run scripts/test-deps.sh to install it")
	return ""
}

// Missing fails the test under CI and skips it elsewhere.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true and a test prerequisite is missing: %s", why)
	}
	t.Skip(why)
}

// Short skips a slow integration test under `go test -short`, except under CI
// where every test runs.
func Short(t testing.TB) {
	t.Helper()
	if testing.Short() && !InCI() {
		t.Skip("slow integration test skipped with -short")
	}
}

// WriteExecutable writes an executable file (a fake tool, a shim) that a
// test then runs. A child process writes it: a file this process held open
// for writing would be inherited by any child another parallel test forks at
// that moment, and running the file until that child execs fails with
// ETXTBSY ("Text file busy"), a flake no retry in the test can see when a
// script runs the file.
func WriteExecutable(t testing.TB, path, content string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `cat >"$1" && chmod 0755 "$1"`, "sh", path)
	cmd.Stdin = strings.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing %s: %v\n%s", path, err, out)
	}
}
