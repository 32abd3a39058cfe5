//go:build linux

package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docCommand is a command line the documentation shows.
type docCommand struct {
	where string // file:line
	dir   string // the directory it runs in (cd DIR &&), relative to the repository
	args  []string
}

// docFiles are the documents whose commands must work as written.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("../../examples/*/README.md")
	return append(append(files, "../../README.md"), examples...)
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// docCommands extracts the clockwatch and go run command lines from code
// blocks (fenced or indented) and inline code: prompts and sudo dropped,
// continuation lines joined, comments and what follows a pipe or a
// redirection cut.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	var out []docCommand
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		fenced := false
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			where := strings.TrimPrefix(f, "../../") + ":" + strconv.Itoa(i+1)
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fenced = !fenced
				continue
			}
			var candidates []string
			if fenced || strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") {
				for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
					i++
					l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(lines[i])
				}
				candidates = append(candidates, l)
			} else {
				for _, m := range inlineCode.FindAllStringSubmatch(l, -1) {
					candidates = append(candidates, m[1])
				}
			}
			for _, c := range candidates {
				if cmd, ok := parseDocLine(c); ok {
					cmd.where = where
					out = append(out, cmd)
				}
			}
		}
	}
	return out
}

var prompt = regexp.MustCompile(`^(\$ |# )?(sudo (-u \S+ )?)?`)

// parseDocLine returns the command of one documented line, ok false when
// it is no clockwatch or go run command.
func parseDocLine(l string) (docCommand, bool) {
	l = prompt.ReplaceAllString(strings.TrimSpace(l), "")
	var cmd docCommand
	if rest, ok := strings.CutPrefix(l, "cd "); ok {
		dir, after, ok := strings.Cut(rest, " && ")
		if !ok {
			return cmd, false
		}
		cmd.dir, l = dir, after
	}
	for _, cut := range []string{" #", " |", " >", " 2>", " &", " ;"} {
		if i := strings.Index(l, cut); i >= 0 {
			l = l[:i]
		}
	}
	words := shellWords(l)
	if len(words) == 0 {
		return cmd, false
	}
	switch {
	case words[0] == "clockwatch" || words[0] == "/usr/bin/clockwatch":
		if len(words) > 1 && strings.HasSuffix(words[1], ":") {
			return cmd, false // a label in printed output ("clockwatch only:")
		}
		cmd.args = append([]string{"clockwatch"}, synopsis(words[1:])...)
	case len(words) > 2 && words[0] == "go" && words[1] == "run":
		cmd.args = words
	default:
		return cmd, false
	}
	return cmd, true
}

// shellWords splits a line as sh would for these simple commands: on
// blanks, with single and double quotes.
func shellWords(l string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(l); i++ {
		switch ch := l[i]; {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// placeholders are what a synopsis writes for a value, and a value of that
// kind.
var placeholders = map[string]string{"DURATION": "1s", "WHEN": "24h", "REASON": "drill"}

// synopsis turns a synopsis into a command line: optional groups ([--json])
// become given, placeholders (FILE, PATH, DURATION) values of their kind,
// and an optional word (help [command]) goes.
func synopsis(words []string) []string {
	var out []string
	for _, w := range words {
		alone := strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") // [word], not [--flag VALUE]
		w = strings.Trim(w, "[]")
		name, val, hasVal := strings.Cut(w, "=")
		switch {
		case w == "":
		case alone && !strings.HasPrefix(w, "-") && strings.ToLower(w) == w:
			// an optional word: help [command]
		case hasVal && val == strings.ToUpper(val) && val != strings.ToLower(val):
			out = append(out, name+"="+placeholder(val))
		case w == strings.ToUpper(w) && w != strings.ToLower(w):
			out = append(out, placeholder(w))
		default:
			out = append(out, w)
		}
	}
	return out
}

func placeholder(p string) string {
	if v, ok := placeholders[p]; ok {
		return v
	}
	return "/nonexistent/" + strings.ToLower(p)
}

// TestDocumentedCommands: every clockwatch command line in docs/, the
// README and the examples' READMEs parses as written (its command and flags
// exist; none runs here), and every `go run` names a main package that
// builds from where the docs run it, with flags it declares.
// TestDocumentedCommandsRun (docs_run_test.go) runs them, and the other
// shell lines of the docs, or says why one cannot run.
func TestDocumentedCommands(t *testing.T) {
	t.Parallel()
	cmds := docCommands(t)
	var clockwatch, goRun int
	for _, cmd := range cmds {
		if cmd.args[0] == "clockwatch" {
			clockwatch++
			var out, errOut bytes.Buffer
			c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
			app, _ := c.app()
			if _, _, err := parse(app, joinNegativeValues(cmd.args[1:])); err != nil {
				t.Errorf("%s: %s: %v", cmd.where, strings.Join(cmd.args, " "), explainParseError(app, cmd.args[1:], err))
			}
			continue
		}
		goRun++
		checkGoRun(t, cmd)
	}
	if clockwatch < 20 || goRun < 3 {
		t.Errorf("found %d clockwatch and %d go run commands in the docs, want at least 20 and 3: the extraction is broken", clockwatch, goRun)
	}
}

// checkGoRun checks `go run PKG args` from cmd.dir: go list finds a main
// package there (in this repository's workspace), and each -flag is one
// the package declares (./cmd/clockwatch's are parsed by its own parser).
func checkGoRun(t *testing.T, cmd docCommand) {
	t.Helper()
	dir := filepath.Join("../..", cmd.dir)
	pkg, flags := cmd.args[2], cmd.args[3:]
	list := exec.Command("go", "list", "-f", "{{.Name}} {{.Dir}}", pkg)
	list.Dir = dir
	// Only stdout is go list's answer: on a cold module cache, stderr has
	// its "go: downloading" lines.
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	name, pkgDir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err != nil || name != "main" {
		t.Errorf("%s: cd %s && go list %s: %v %s%s; want a main package", cmd.where, cmd.dir, pkg, err, out, stderr.Bytes())
		return
	}
	if strings.HasSuffix(pkg, "/cmd/clockwatch") {
		c := &cli{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer), getenv: func(string) string { return "" }}
		app, _ := c.app()
		if _, _, err := parse(app, flags); err != nil {
			t.Errorf("%s: go run %s %v: %v", cmd.where, pkg, flags, err)
		}
		return
	}
	declared := declaredFlags(t, pkgDir)
	for _, f := range flags {
		if !strings.HasPrefix(f, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !declared[name] {
			t.Errorf("%s: go run %s: %s is not a flag it declares (%v)", cmd.where, pkg, f, declared)
		}
	}
}

// flagDeclarers are the methods of the flag package and of a flag.FlagSet
// that declare a flag, its name the first argument (after the variable for
// the ...Var ones).
var flagDeclarers = map[string]bool{"Bool": true, "BoolVar": true, "BoolFunc": true, "Duration": true, "DurationVar": true,
	"Float64": true, "Float64Var": true, "Func": true, "Int": true, "IntVar": true, "Int64": true, "Int64Var": true,
	"String": true, "StringVar": true, "TextVar": true, "Uint": true, "UintVar": true, "Uint64": true, "Uint64Var": true, "Var": true}

// declaredFlags reads the names of the standard library flags a main
// package declares (flag.Duration("ttl", ...), flag.StringVar(&v, "name",
// ...), or the same on a flag.FlagSet: fs.String("out", ...)).
func declaredFlags(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if _, ok := sel.X.(*ast.Ident); !ok || !flagDeclarers[sel.Sel.Name] {
				return true
			}
			arg := 0
			if strings.HasSuffix(sel.Sel.Name, "Var") {
				arg = 1
			}
			if len(call.Args) > arg {
				if lit, ok := call.Args[arg].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						names[s] = true
					}
				}
			}
			return true
		})
	}
	return names
}
