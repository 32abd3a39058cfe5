// Command clockwatch-vet reports intervals, timeouts, deadlines, renewal checks
// and expiries computed from wall-clock readings (see the wallclock package and
// docs/audit.md).
//
// Standalone it follows the singlechecker conventions: clockwatch-vet ./...
// prints file:line:col: message for each finding and exits with status 3 when
// it found something (1 when the packages do not load). Through go vet:
//
//	go vet -vettool=$(command -v clockwatch-vet) ./...
//
// With -sarif it writes SARIF 2.1.0 for code-scanning UIs instead (sarif.go).
// With -fix it applies the suggested fixes and, unlike the bare checker (which
// prints nothing in that mode and exits 0), prints each finding that has no
// suggested fix, marked "not fixed", so that none is dropped unseen.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

func main() {
	if wantsSARIF(os.Args[1:]) {
		os.Exit(runSARIF(os.Args[1:], "", os.Stdout, os.Stderr))
	}
	a := wallclock.Analyzer
	if fixRequested(os.Args[1:]) {
		a = reportUnfixable(a, os.Stderr)
	}
	singlechecker.Main(a)
}

// fixRequested reports whether args ask for -fix (the checker's own flag).
func fixRequested(args []string) bool {
	for _, arg := range args {
		if arg == "--" {
			return false
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if strings.HasPrefix(arg, "-") && name == "fix" {
			return !hasValue || value != "false" && value != "0" && value != "f" && value != "F" && value != "FALSE" && value != "False"
		}
	}
	return false
}

// reportUnfixable wraps a so that every finding without a suggested fix is
// also written to w as file:line:col: message: the checker's -fix mode
// applies fixes and prints nothing else.
func reportUnfixable(a *analysis.Analyzer, w io.Writer) *analysis.Analyzer {
	wrapped := *a
	wrapped.Run = func(pass *analysis.Pass) (any, error) {
		report := pass.Report
		pass.Report = func(d analysis.Diagnostic) {
			if len(d.SuggestedFixes) == 0 {
				fmt.Fprintf(w, "%s: %s (not fixed: no suggested fix, change it by hand)\n", pass.Fset.Position(d.Pos), d.Message)
			}
			report(d)
		}
		return a.Run(pass)
	}
	return &wrapped
}
