package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command of docs/audit.md: a line of a ```sh block, with the exit status
// its "# exit N" comment says (0 without one).
type docCommand struct {
	line string
	exit int
	slow bool
	at   int
}

var exitComment = regexp.MustCompile(`#\s*exit\s+(\d+)\s*$`)

// docBlocks reads the ```sh blocks (```sh slow: the ones that build
// golangci-lint) and the files the page shows (```yaml file=NAME,
// ```make file=NAME) from docs/audit.md.
func docBlocks(t *testing.T, path string) ([]docCommand, map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []docCommand
	files := map[string]string{}
	var in, slow bool
	var file string
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			in, slow, file = true, false, ""
			if len(info) > 0 && info[0] == "sh" {
				slow = len(info) > 1 && info[1] == "slow"
				file = "-sh-"
			}
			for _, w := range info {
				if name, ok := strings.CutPrefix(w, "file="); ok {
					file = name
				}
			}
			body.Reset()
		case in && line == "```":
			in = false
			if file != "" && file != "-sh-" {
				files[file] = body.String()
			}
		case in && file == "-sh-":
			cmd := strings.TrimSpace(line)
			if cmd == "" || strings.HasPrefix(cmd, "#") {
				continue
			}
			c := docCommand{line: cmd, slow: slow, at: n}
			if m := exitComment.FindStringSubmatch(cmd); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			cmds = append(cmds, c)
		case in:
			body.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds, files
}

// TestDocsCommands runs every command of docs/audit.md as written, in order,
// from a project with wall-clock code in Go and Java, with CLOCKWATCH a
// fresh clone of this repository (its committed HEAD). The ```sh slow block
// (golangci-lint built from the module proxy, minutes) runs when
// CLOCKWATCH_DOCS_SLOW=1, as make audit-real sets it; otherwise the test
// says which commands it left.
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both tools from a fresh clone: not with -short")
	}
	for _, tool := range []string{"git", "javac", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/deps.d): %v", tool, err)
		}
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "clockwatch")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	project := filepath.Join(tmp, "project")
	write := func(name, text string) {
		p := filepath.Join(project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/project\n\ngo 1.26\n")
	write("lease.go", `package project

import "time"

type lease struct{ expiresAt, renewedAt int64 }

func (l *lease) renew(ttl int64) {
	l.renewedAt = time.Now().Unix()
	l.expiresAt = l.renewedAt + ttl
}

func (l *lease) expired() bool { return time.Now().Unix() > l.expiresAt }

func elapsed(start time.Time) int64 { return time.Now().Unix() - start.Unix() }

func callElapsed() int64 { return elapsed(time.Now()) }
`)
	write("src/main/java/example/Lease.java", `package example;

class Lease {
    private long expiresAt;

    void renew(long ttl) {
        expiresAt = System.currentTimeMillis() + ttl;
    }

    boolean expired() {
        return System.currentTimeMillis() > expiresAt;
    }
}
`)
	cmds, files := docBlocks(t, filepath.Join(clone, "docs", "audit.md"))
	if len(cmds) < 8 {
		t.Fatalf("only %d commands in docs/audit.md's sh blocks", len(cmds))
	}
	for name, text := range files {
		write(name, text)
	}
	env := append(os.Environ(), "CLOCKWATCH="+clone, "GOBIN="+filepath.Join(tmp, "gobin"))
	slow := os.Getenv("CLOCKWATCH_DOCS_SLOW") == "1"
	var left []string
	for _, c := range cmds {
		if c.slow && !slow {
			left = append(left, c.line)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", c.line)
		cmd.Dir, cmd.Env = project, env
		out, err := cmd.CombinedOutput()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("docs/audit.md:%d: %s: %v", c.at, c.line, err)
		}
		if code != c.exit {
			t.Errorf("docs/audit.md:%d: %s: exit %d, the page says %d\n%s", c.at, c.line, code, c.exit, out)
		}
	}
	if len(left) > 0 {
		t.Logf("not run without CLOCKWATCH_DOCS_SLOW=1 (make audit-real runs them): %q", left)
	}
}
