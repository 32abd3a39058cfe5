package wallclock

import (
	"go/ast"
	"go/token"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// misspelt matches what looks like the directive but is not it: a space
// after // (the Java plugin's form), a block comment, a space around the
// colon, an underscore.
var misspelt = regexp.MustCompile(`^(//|/\*)\s*clockwatch\s*:\s*wallclock[-_ ]?ok\b`)

// directives finds the lines that carry a silencing directive with a reason,
// and reports directives without one and directives misspelt.
func directives(fset *token.FileSet, f *ast.File) (map[int]bool, []analysis.Diagnostic) {
	ok := map[int]bool{}
	var bad []analysis.Diagnostic
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			rest, found := strings.CutPrefix(cm.Text, Directive)
			if found && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				if strings.TrimSpace(rest) == "" {
					bad = append(bad, analysis.Diagnostic{Pos: cm.Pos(), Category: CategoryDirective,
						Message: Directive + " needs a reason: say why the wall clock is right here"})
					continue
				}
				ok[fset.Position(cm.Pos()).Line] = true
				continue
			}
			if misspelt.MatchString(cm.Text) {
				bad = append(bad, analysis.Diagnostic{Pos: cm.Pos(), Category: CategoryDirective,
					Message: "misspelt directive: it silences nothing; write " + Directive + " reason, with no space after // and none around the colon (Go directives have none; the Java plugin's comment may)"})
			}
		}
	}
	return ok, bad
}
