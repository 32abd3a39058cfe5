package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyFiles copies the repository's files at paths into a new directory
// (keeping their relative paths) and returns it.
func copyFiles(t *testing.T, paths ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReleaseScript: the release script passes on the repository's files as
// they are (VERSION, both go.mod, CHANGELOG.md agree) and prints both tags,
// and refuses, naming the file, when a go.mod requires the client at another
// version or the changelog has no section for the version.
func TestReleaseScript(t *testing.T) {
	t.Parallel()
	files := []string{"VERSION", "go.mod", "examples/leader/go.mod", "examples/redislock/go.mod", "CHANGELOG.md"}
	vb, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(vb))
	script, err := filepath.Abs("../scripts/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	release := func(root string) (string, error) {
		cmd := exec.Command(script)
		cmd.Env = append(os.Environ(), "ROOT="+root)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := release(copyFiles(t, files...))
	for _, want := range []string{"git tag -a v" + v + " ", "git tag -a stepdown/v" + v + " ", "git push origin v" + v + " stepdown/v" + v} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("release.sh on the repository's files: %v\n%s\nwant %q", err, out, want)
		}
	}

	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"the client required at another version", "go.mod", "github.com/clockwatch/clockwatch/stepdown v" + v, "github.com/clockwatch/clockwatch/stepdown v0.0.1",
			"go.mod requires github.com/clockwatch/clockwatch/stepdown v0.0.1, VERSION says v" + v},
		{"the example requiring another version", "examples/leader/go.mod", "github.com/clockwatch/clockwatch/stepdown v" + v, "github.com/clockwatch/clockwatch/stepdown v9.9.9",
			"examples/leader/go.mod requires github.com/clockwatch/clockwatch/stepdown v9.9.9"},
		{"the Redis example requiring another version", "examples/redislock/go.mod", "github.com/clockwatch/clockwatch/stepdown v" + v, "github.com/clockwatch/clockwatch/stepdown v9.9.9",
			"examples/redislock/go.mod requires github.com/clockwatch/clockwatch/stepdown v9.9.9"},
		{"no changelog section", "CHANGELOG.md", "## " + v, "## 0.0.0", `CHANGELOG.md has no "## ` + v + `" section`},
		{"not X.Y.Z", "VERSION", v, "1.0", `VERSION: want X.Y.Z, got "1.0"`},
	} {
		dir := copyFiles(t, files...)
		p := filepath.Join(dir, tc.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.old) {
			t.Fatalf("%s: %s has no %q", tc.name, tc.file, tc.old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := release(dir)
		if err == nil || !strings.Contains(out, tc.want) || strings.Contains(out, "git tag") {
			t.Errorf("%s: release.sh: %v\n%s\nwant a refusal saying %q", tc.name, err, out, tc.want)
		}
	}
}

// TestVersionScript: the version the build and the packages carry comes from
// the VERSION file: a pre-release (~) before its tag, the release on it, a
// later build (+) after it, .dirty with changes: in the order dpkg and rpm
// upgrade.
func TestVersionScript(t *testing.T) {
	t.Parallel()
	dir := copyFiles(t, "scripts/version.sh")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := func() string {
		t.Helper()
		// Run by bash, not exec'd: a copy written while another test
		// forks can be "Text file busy".
		out, err := exec.Command("bash", filepath.Join(dir, "scripts/version.sh")).CombinedOutput()
		if err != nil {
			t.Fatalf("version.sh: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("VERSION", "1.2.3\n")
	git("add", ".")
	git("commit", "-qm", "1.2.3 begins")
	write("a", "a")
	git("add", "a")
	git("commit", "-qm", "work")
	var got []string
	got = append(got, version())
	git("tag", "v1.2.3")
	got = append(got, version())
	write("b", "b")
	git("add", "b")
	git("commit", "-qm", "more")
	got = append(got, version())
	write("b", "changed")
	got = append(got, version())
	sha := git("rev-parse", "--short", "HEAD")
	prev := git("rev-parse", "--short", "HEAD~1")
	want := []string{"1.2.3~git1.g" + prev, "1.2.3", "1.2.3+git1.g" + sha, "1.2.3+git1.g" + sha + ".dirty"}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("versions %q, want %q", got, want)
		}
	}
	// dpkg upgrades in this order (rpm's ~ and + sort the same way).
	if _, err := exec.LookPath("dpkg"); err == nil {
		for i := 0; i+1 < 3; i++ {
			if err := exec.Command("dpkg", "--compare-versions", want[i], "lt", want[i+1]).Run(); err != nil {
				t.Errorf("dpkg: %s is not older than %s", want[i], want[i+1])
			}
		}
	}
}
