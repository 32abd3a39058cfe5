package wallclock_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

func TestFindings(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), wallclock.Analyzer,
		"lockclient", "stripped", "notreported", "silenced", "clockutil")
}

// TestSuggestedFixes applies the mechanical fixes and compares the result with
// the .golden files beside the sources.
func TestSuggestedFixes(t *testing.T) {
	t.Parallel()
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), wallclock.Analyzer, "fixes")
}
