package wallclock_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

func TestFindings(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), wallclock.Analyzer,
		"lockclient", "stripped", "notreported", "silenced", "clockutil",
		"clocks", "myclock", "myclockimpl", "carriers", "ordering")
}

// TestAmbiguousOff turns the lower-severity category off: the ambiguous
// comparison in ordering is then not reported (ambiguousoff has the same
// code with no want on it).
func TestAmbiguousOff(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), wallclock.New(wallclock.Config{Ambiguous: false}), "ambiguousoff")
}

// TestSuggestedFixes applies the mechanical fixes and compares the result with
// the .golden files beside the sources.
func TestSuggestedFixes(t *testing.T) {
	t.Parallel()
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), wallclock.Analyzer, "fixes")
}
