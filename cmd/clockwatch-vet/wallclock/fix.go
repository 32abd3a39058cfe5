package wallclock

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// sinceFix rewrites x.UnixM() - y.UnixM(), both readings that keep their
// monotonic reading, into the same number from time.Since or Sub.
func (c *checker) sinceFix(n *ast.BinaryExpr) (analysis.SuggestedFix, bool) {
	xc, ok1 := ast.Unparen(n.X).(*ast.CallExpr)
	yc, ok2 := ast.Unparen(n.Y).(*ast.CallExpr)
	if !ok1 || !ok2 || len(xc.Args) != 0 || len(yc.Args) != 0 {
		return analysis.SuggestedFix{}, false
	}
	xf, yf := typeutil.StaticCallee(c.pass.TypesInfo, xc), typeutil.StaticCallee(c.pass.TypesInfo, yc)
	if xf == nil || yf == nil || !isTimeMethod(xf) || !isTimeMethod(yf) || xf.Name() != yf.Name() {
		return analysis.SuggestedFix{}, false
	}
	x, y := recvOf(xc), recvOf(yc)
	if c.classify(x) != mono || c.classify(y) != mono {
		return analysis.SuggestedFix{}, false
	}
	timePkg, ok := c.timeName(n)
	if !ok {
		return analysis.SuggestedFix{}, false
	}
	var d string
	if isNowCall(c.pass.TypesInfo, x) {
		d = fmt.Sprintf("%s.Since(%s)", timePkg, c.render(y))
	} else {
		d = fmt.Sprintf("%s.Sub(%s)", c.render(x), c.render(y))
	}
	var text string
	switch xf.Name() {
	case "Unix":
		text = fmt.Sprintf("int64(%s / %s.Second)", d, timePkg)
	case "UnixMilli":
		text = d + ".Milliseconds()"
	case "UnixMicro":
		text = d + ".Microseconds()"
	case "UnixNano":
		text = d + ".Nanoseconds()"
	default:
		return analysis.SuggestedFix{}, false
	}
	return analysis.SuggestedFix{
		Message:   "compute the elapsed time from the monotonic reading",
		TextEdits: []analysis.TextEdit{{Pos: n.Pos(), End: n.End(), NewText: []byte(text)}},
	}, true
}

// unstripFix drops a UTC, Local or In call from an operand of Sub, Since,
// Before, ...: none of them depend on the location, so only the monotonic
// reading changes.
func (c *checker) unstripFix(e ast.Expr) (analysis.SuggestedFix, bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return analysis.SuggestedFix{}, false
	}
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn == nil || !isTimeMethod(fn) {
		return analysis.SuggestedFix{}, false
	}
	switch fn.Name() {
	case "UTC", "Local", "In":
	default:
		return analysis.SuggestedFix{}, false
	}
	recv := recvOf(call)
	if c.classify(recv) != mono {
		return analysis.SuggestedFix{}, false
	}
	return analysis.SuggestedFix{
		Message:   "keep the monotonic reading: the location does not change " + "a comparison",
		TextEdits: []analysis.TextEdit{{Pos: call.Pos(), End: call.End(), NewText: []byte(c.render(recv))}},
	}, true
}

func isNowCall(info *types.Info, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := typeutil.StaticCallee(info, call)
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "time" && fn.Name() == "Now" && fn.Signature().Recv() == nil
}

// timeName is the name under which the file around n imports package time.
func (c *checker) timeName(n ast.Node) (string, bool) {
	for _, f := range c.pass.Files {
		if f.FileStart > n.Pos() || n.Pos() > f.FileEnd {
			continue
		}
		for _, imp := range f.Imports {
			if imp.Path.Value != `"time"` {
				continue
			}
			if imp.Name == nil {
				return "time", true
			}
			if imp.Name.Name == "." || imp.Name.Name == "_" {
				return "", false
			}
			return imp.Name.Name, true
		}
	}
	return "", false
}

// render prints e as source, shortened for a message.
func (c *checker) render(e ast.Node) string {
	var b bytes.Buffer
	if err := format.Node(&b, c.pass.Fset, e); err != nil {
		return "expression"
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
