package timesource_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestJudgesImportNoSource checks the contract's point: health and the
// stepdown policy judge readings, so neither imports a source package
// (probe/chrony, probe/ntpd, probe/sntp, and those to come). The kernel's
// own package, probe, gives health its adjtimex facts and is allowed.
func TestJudgesImportNoSource(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"internal/health", "internal/stepdown/policy"} {
		p, err := build.Import("github.com/clockwatch/clockwatch/"+pkg, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/clockwatch/clockwatch/internal/probe/") {
				t.Errorf("%s imports the source package %s: it must judge timesource readings only", pkg, imp)
			}
		}
	}
}
