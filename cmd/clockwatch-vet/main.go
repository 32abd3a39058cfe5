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
package main

import (
	"os"

	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

func main() {
	if wantsSARIF(os.Args[1:]) {
		os.Exit(runSARIF(os.Args[1:], "", os.Stdout, os.Stderr))
	}
	singlechecker.Main(wallclock.Analyzer)
}
