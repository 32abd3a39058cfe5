package wallclock

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Analyzer is the wall-clock timing check.
var Analyzer = &analysis.Analyzer{
	Name:      "wallclock",
	Doc:       "report intervals, deadlines and expiries computed from wall-clock readings\n\nA clock step (chronyd's makestep, an operator's date -s, a VM resumed from a snapshot) moves every wall-clock reading by the step; time.Since on a time.Time from time.Now() uses the monotonic reading and does not move. Silence a reviewed line with //clockwatch:wallclock-ok reason.",
	URL:       "https://github.com/clockwatch/clockwatch/blob/main/docs/audit.md",
	Run:       run,
	FactTypes: []analysis.Fact{new(readingFact)},
}

// Directive silences a finding on its line or the line below it.
const Directive = "//clockwatch:wallclock-ok"

// kind is what a value is, as far as clocks go. The order matters: joining
// two kinds keeps the greater one, so a variable that is assigned a stripped
// reading anywhere counts as stripped.
type kind uint8

const (
	none      kind = iota
	mono           // a time.Time from time.Now() that keeps its monotonic reading
	stripped       // a local time.Time without its monotonic reading
	formatted      // text or bytes made from a local reading (Format, MarshalText, ...)
	wallInt        // a wall-clock reading as a number (Unix, UnixMilli, ... and arithmetic on it)
)

func (k kind) local() bool { return k == mono || k == stripped }

func join(a, b kind) kind {
	if a > b {
		return a
	}
	return b
}

// readingFact carries what a package's functions return and its variables and
// fields hold to the packages that import it.
type readingFact struct {
	Kind    kind   // a variable's or field's kind
	Results []kind // a function's results
}

func (*readingFact) AFact() {}

func (f *readingFact) String() string {
	if f.Results != nil {
		ks := make([]string, len(f.Results))
		for i, k := range f.Results {
			ks[i] = k.String()
		}
		return "returns " + strings.Join(ks, ",")
	}
	return "holds " + f.Kind.String()
}

func (k kind) String() string {
	switch k {
	case mono:
		return "reading"
	case stripped:
		return "stripped"
	case formatted:
		return "formatted"
	case wallInt:
		return "wallint"
	}
	return "-"
}

type checker struct {
	pass    *analysis.Pass
	vars    map[*types.Var]kind // variables, fields, parameters; containers hold their elements' kind
	results map[*types.Func][]kind
	changed bool
}

func run(pass *analysis.Pass) (any, error) {
	c := &checker{pass: pass, vars: map[*types.Var]kind{}, results: map[*types.Func][]kind{}}
	// Flow-insensitive propagation: repeat until no variable changes kind.
	// Each round can only raise a kind, so it ends; the cap is a guard.
	for range 32 {
		c.changed = false
		for _, f := range pass.Files {
			c.propagate(f)
		}
		if !c.changed {
			break
		}
	}
	c.exportFacts()
	for _, f := range pass.Files {
		c.check(f)
	}
	return nil, nil
}

func (c *checker) exportFacts() {
	// Only exported names can be reached from another package.
	for v, k := range c.vars {
		if v.Exported() && v.Pkg() == c.pass.Pkg && (v.IsField() || v.Parent() == c.pass.Pkg.Scope()) {
			c.pass.ExportObjectFact(v, &readingFact{Kind: k})
		}
	}
	for fn, ks := range c.results {
		if fn.Exported() && fn.Pkg() == c.pass.Pkg {
			c.pass.ExportObjectFact(fn, &readingFact{Results: ks})
		}
	}
}

// varKind is what v holds, from this package's assignments or from a fact.
func (c *checker) varKind(v *types.Var) kind {
	if k, ok := c.vars[v]; ok {
		return k
	}
	if v.Pkg() != nil && v.Pkg() != c.pass.Pkg {
		var f readingFact
		if c.pass.ImportObjectFact(v, &f) {
			return f.Kind
		}
	}
	return none
}

func (c *checker) resultKinds(fn *types.Func) []kind {
	if ks, ok := c.results[fn]; ok {
		return ks
	}
	if fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg {
		var f readingFact
		if c.pass.ImportObjectFact(fn.Origin(), &f) {
			return f.Results
		}
	}
	return nil
}

func (c *checker) setVar(v *types.Var, k kind) {
	if v == nil || k == none || v.Name() == "_" {
		return
	}
	if old := c.vars[v]; join(old, k) != old {
		c.vars[v] = join(old, k)
		c.changed = true
	}
}

func (c *checker) setResult(fn *types.Func, i, n int, k kind) {
	if k == none {
		return
	}
	ks := c.results[fn]
	if ks == nil {
		ks = make([]kind, n)
		c.results[fn] = ks
	}
	if i < len(ks) && join(ks[i], k) != ks[i] {
		ks[i] = join(ks[i], k)
		c.changed = true
	}
}

// target is the variable an assignment to e writes, if it is one the analysis
// follows: a variable, a field without a tag, or the container of an element.
func (c *checker) target(e ast.Expr) *types.Var {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, _ := c.pass.TypesInfo.ObjectOf(e).(*types.Var)
		return v
	case *ast.SelectorExpr:
		if sel := c.pass.TypesInfo.Selections[e]; sel != nil {
			if sel.Kind() != types.FieldVal || tagged(sel) {
				return nil
			}
			return sel.Obj().(*types.Var)
		}
		v, _ := c.pass.TypesInfo.ObjectOf(e.Sel).(*types.Var) // pkg.Var
		return v
	case *ast.IndexExpr:
		return c.target(e.X)
	case *ast.StarExpr:
		return c.target(e.X)
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			return c.target(e.X)
		}
	}
	return nil
}

// tagged reports whether the selected field has a struct tag: such fields
// are how decoded messages and persisted records arrive, so what they hold
// comes from elsewhere even when this package also fills them.
func tagged(sel *types.Selection) bool {
	t := sel.Recv()
	idx := sel.Index()
	for i, fi := range idx {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok || fi >= st.NumFields() {
			return false
		}
		if i == len(idx)-1 {
			return st.Tag(fi) != ""
		}
		t = st.Field(fi).Type()
	}
	return false
}

// classify says what the value of e is.
func (c *checker) classify(e ast.Expr) kind {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident, *ast.SelectorExpr:
		if v := c.target(e); v != nil {
			return c.varKind(v)
		}
	case *ast.IndexExpr:
		return c.classify(e.X)
	case *ast.StarExpr:
		return c.classify(e.X)
	case *ast.TypeAssertExpr:
		return c.classify(e.X)
	case *ast.UnaryExpr:
		switch e.Op {
		case token.AND, token.ARROW, token.ADD:
			return c.classify(e.X)
		}
	case *ast.BinaryExpr:
		l, r := c.classify(e.X), c.classify(e.Y)
		switch e.Op {
		case token.ADD:
			if (l == wallInt) != (r == wallInt) {
				return wallInt
			}
		case token.SUB, token.QUO:
			if l == wallInt && r != wallInt {
				return wallInt
			}
		case token.MUL:
			if (l == wallInt) != (r == wallInt) {
				return wallInt
			}
		}
	case *ast.CallExpr:
		return c.classifyCall(e)
	}
	return none
}

func (c *checker) classifyCall(call *ast.CallExpr) kind {
	info := c.pass.TypesInfo
	if tv, ok := info.Types[call.Fun]; ok && tv.IsType() && len(call.Args) == 1 {
		return c.classify(call.Args[0]) // int64(x), time.Duration(x)
	}
	if b, ok := typeutil.Callee(info, call).(*types.Builtin); ok && (b.Name() == "max" || b.Name() == "min") {
		k := none
		for _, a := range call.Args {
			k = join(k, c.classify(a))
		}
		return k
	}
	fn := typeutil.StaticCallee(info, call)
	if fn == nil {
		return none
	}
	if k, ok := c.timeCall(fn, call); ok {
		return k
	}
	if k, ok := c.atomicLoad(fn, call); ok {
		return k
	}
	if ks := c.resultKinds(fn); len(ks) > 0 {
		return ks[0]
	}
	return none
}

func recvOf(call *ast.CallExpr) ast.Expr {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		return sel.X
	}
	return nil
}

func isTimeMethod(fn *types.Func) bool {
	sig := fn.Signature()
	if sig.Recv() == nil || fn.Pkg() == nil || fn.Pkg().Path() != "time" {
		return false
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Time"
}

// timeCall classifies the calls of package time that make or transform a
// reading.
func (c *checker) timeCall(fn *types.Func, call *ast.CallExpr) (kind, bool) {
	if fn.Pkg() == nil || fn.Pkg().Path() != "time" {
		return none, false
	}
	if isTimeMethod(fn) {
		k := c.classify(recvOf(call))
		if !k.local() {
			return none, true
		}
		switch fn.Name() {
		case "Unix", "UnixMilli", "UnixMicro", "UnixNano":
			return wallInt, true
		case "Round", "Truncate", "UTC", "Local", "In", "AddDate":
			return stripped, true
		case "Add":
			return k, true
		case "Format", "AppendFormat", "String", "MarshalText", "MarshalJSON", "MarshalBinary", "GobEncode", "AppendText", "AppendBinary":
			return formatted, true
		}
		return none, true
	}
	switch fn.Name() {
	case "Now":
		return mono, true
	case "Unix", "UnixMilli", "UnixMicro":
		for _, a := range call.Args {
			if c.classify(a) == wallInt {
				return stripped, true
			}
		}
	case "Parse", "ParseInLocation":
		if len(call.Args) >= 2 && c.classify(call.Args[1]) == formatted {
			return stripped, true
		}
	}
	return none, true
}

// atomicTypeMethod reports whether fn is a method of one of sync/atomic's
// types (Int64, Uint64, Value, Pointer[T], ...).
func atomicTypeMethod(fn *types.Func) bool {
	return fn.Pkg() != nil && fn.Pkg().Path() == "sync/atomic" && fn.Signature().Recv() != nil
}

func (c *checker) atomicLoad(fn *types.Func, call *ast.CallExpr) (kind, bool) {
	if fn.Pkg() == nil || fn.Pkg().Path() != "sync/atomic" {
		return none, false
	}
	name := fn.Name()
	if atomicTypeMethod(fn) {
		if name == "Load" || name == "Swap" {
			return c.classify(recvOf(call)), true
		}
		return none, true
	}
	if (strings.HasPrefix(name, "Load") || strings.HasPrefix(name, "Swap")) && len(call.Args) > 0 {
		return c.classify(call.Args[0]), true
	}
	return none, true
}

// propagate records, for one file, every way a reading flows into a variable,
// a field, a parameter or a result.
func (c *checker) propagate(f *ast.File) {
	info := c.pass.TypesInfo
	var funcs []*types.Func // enclosing declared functions; nil for literals
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch top.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				funcs = funcs[:len(funcs)-1]
			}
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.FuncDecl:
			fn, _ := info.Defs[n.Name].(*types.Func)
			funcs = append(funcs, fn)
		case *ast.FuncLit:
			funcs = append(funcs, nil)
		case *ast.AssignStmt:
			if n.Tok != token.ASSIGN && n.Tok != token.DEFINE {
				break
			}
			c.assignAll(n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			c.assignAll(lhs, n.Values)
		case *ast.CompositeLit:
			c.compositeLit(n)
		case *ast.SendStmt:
			c.setVar(c.target(n.Chan), c.classify(n.Value))
		case *ast.RangeStmt:
			if n.Value != nil {
				c.setVar(c.target(n.Value), c.classify(n.X))
			}
		case *ast.ReturnStmt:
			if len(funcs) == 0 || funcs[len(funcs)-1] == nil {
				break
			}
			fn := funcs[len(funcs)-1]
			nres := fn.Signature().Results().Len()
			if len(n.Results) == nres {
				for i, r := range n.Results {
					c.setResult(fn, i, nres, c.classify(r))
				}
			} else if len(n.Results) == 0 {
				for i := range nres {
					c.setResult(fn, i, nres, c.varKind(fn.Signature().Results().At(i)))
				}
			}
		case *ast.CallExpr:
			c.call(n)
		}
		return true
	})
}

func (c *checker) assignAll(lhs, rhs []ast.Expr) {
	switch {
	case len(lhs) == len(rhs):
		for i := range lhs {
			c.setVar(c.target(lhs[i]), c.classify(rhs[i]))
		}
	case len(rhs) == 1:
		r := ast.Unparen(rhs[0])
		if call, ok := r.(*ast.CallExpr); ok {
			if fn := typeutil.StaticCallee(c.pass.TypesInfo, call); fn != nil {
				if p := fn.Pkg(); p != nil && (p.Path() == "time" || p.Path() == "sync/atomic") {
					// b, err := t.MarshalText(); t, err := time.Parse(...); old, ok := atomic...
					c.setVar(c.target(lhs[0]), c.classifyCall(call))
					return
				}
				ks := c.resultKinds(fn)
				for i := range lhs {
					if i < len(ks) {
						c.setVar(c.target(lhs[i]), ks[i])
					}
				}
			}
			return
		}
		// v, ok := m[k]; v, ok := x.(T); v, ok := <-ch
		c.setVar(c.target(lhs[0]), c.classify(r))
	}
}

func (c *checker) compositeLit(lit *ast.CompositeLit) {
	tv, ok := c.pass.TypesInfo.Types[lit]
	if !ok {
		return
	}
	t := tv.Type
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return
	}
	for i, el := range lit.Elts {
		fi, val := i, el
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			id, ok := kv.Key.(*ast.Ident)
			if !ok {
				continue
			}
			fi, val = -1, kv.Value
			for j := range st.NumFields() {
				if st.Field(j).Name() == id.Name {
					fi = j
				}
			}
		}
		if fi < 0 || fi >= st.NumFields() || st.Tag(fi) != "" {
			continue
		}
		c.setVar(st.Field(fi), c.classify(val))
	}
}

// call follows readings into the parameters of this package's functions, into
// atomics, and through Unmarshal round trips.
func (c *checker) call(call *ast.CallExpr) {
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn == nil {
		return
	}
	switch {
	case fn.Pkg() == c.pass.Pkg:
		sig := fn.Signature()
		for i, a := range call.Args {
			pi := i
			if sig.Variadic() && pi >= sig.Params().Len()-1 {
				pi = sig.Params().Len() - 1
			}
			if pi < sig.Params().Len() {
				c.setVar(sig.Params().At(pi), c.classify(a))
			}
		}
	case atomicTypeMethod(fn):
		switch fn.Name() {
		case "Store", "Swap":
			if len(call.Args) == 1 {
				c.setVar(c.target(recvOf(call)), c.classify(call.Args[0]))
			}
		case "CompareAndSwap":
			if len(call.Args) == 2 {
				c.setVar(c.target(recvOf(call)), c.classify(call.Args[1]))
			}
		}
	case fn.Pkg() != nil && fn.Pkg().Path() == "sync/atomic":
		name := fn.Name()
		switch {
		case (strings.HasPrefix(name, "Store") || strings.HasPrefix(name, "Swap")) && len(call.Args) == 2:
			c.setVar(c.target(call.Args[0]), c.classify(call.Args[1]))
		case strings.HasPrefix(name, "CompareAndSwap") && len(call.Args) == 3:
			c.setVar(c.target(call.Args[0]), c.classify(call.Args[2]))
		}
	case isTimeMethod(fn) && strings.HasPrefix(fn.Name(), "Unmarshal") || isTimeMethod(fn) && fn.Name() == "GobDecode":
		if len(call.Args) == 1 && c.classify(call.Args[0]) == formatted {
			c.setVar(c.target(recvOf(call)), stripped)
		}
	case fn.Pkg() != nil && fn.Pkg().Path() == "encoding/json" && fn.Name() == "Unmarshal":
		if len(call.Args) == 2 && c.classify(call.Args[0]) == formatted {
			c.setVar(c.target(call.Args[1]), stripped)
		}
	}
}

// check reports the findings of one file.
func (c *checker) check(f *ast.File) {
	ok, bare := directives(c.pass.Fset, f)
	for _, pos := range bare {
		c.pass.Report(analysis.Diagnostic{Pos: pos, Message: Directive + " needs a reason: say why the wall clock is right here"})
	}
	report := func(d analysis.Diagnostic) {
		line := c.pass.Fset.Position(d.Pos).Line
		if ok[line] || ok[line-1] {
			return
		}
		c.pass.Report(d)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if c.classify(n.X) != wallInt || c.classify(n.Y) != wallInt {
				break
			}
			switch n.Op {
			case token.SUB:
				d := analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Message: fmt.Sprintf(
					"%s subtracts two wall-clock readings: a clock step changes this elapsed time by the step (a 12 s step back makes it 12 s short or negative); keep the time.Time from time.Now() and use time.Since, which uses the monotonic clock",
					c.render(n))}
				if fix, ok := c.sinceFix(n); ok {
					d.SuggestedFixes = []analysis.SuggestedFix{fix}
				}
				report(d)
			case token.LSS, token.LEQ, token.GTR, token.GEQ:
				report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Message: fmt.Sprintf(
					"%s compares wall-clock readings for a deadline or an expiry: a clock step back postpones it by the step, a step forward brings it early; keep the deadline as a time.Time from time.Now().Add(d) and test time.Now().After(deadline)",
					c.render(n))})
			}
		case *ast.CallExpr:
			c.checkTimeCall(n, report)
		}
		return true
	})
}

func (c *checker) checkTimeCall(call *ast.CallExpr, report func(analysis.Diagnostic)) {
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "time" {
		return
	}
	var a, b ast.Expr // a is the stripped one
	switch {
	case isTimeMethod(fn):
		switch fn.Name() {
		case "Sub", "Before", "After", "Compare", "Equal":
		default:
			return
		}
		if len(call.Args) != 1 {
			return
		}
		x, y := recvOf(call), call.Args[0]
		kx, ky := c.classify(x), c.classify(y)
		switch {
		case kx == stripped && ky.local():
			a, b = x, y
		case ky == stripped && kx.local():
			a, b = y, x
		default:
			return
		}
	case fn.Name() == "Since" || fn.Name() == "Until":
		if len(call.Args) != 1 || c.classify(call.Args[0]) != stripped {
			return
		}
		a = call.Args[0]
	default:
		return
	}
	other := "time.Now()"
	if b != nil {
		other = c.render(b)
	}
	d := analysis.Diagnostic{Pos: call.Pos(), End: call.End(), Message: fmt.Sprintf(
		"%s: %s has lost its monotonic reading (Round, Truncate, UTC, Local, In, AddDate, time.Unix or a marshal round trip drop it), so %s against %s uses the wall clock and a clock step changes the result; keep the time.Time from time.Now() as it is and strip it only to print or persist it",
		c.render(call), c.render(a), fn.Name(), other)}
	if fix, ok := c.unstripFix(a); ok {
		d.SuggestedFixes = []analysis.SuggestedFix{fix}
	}
	report(d)
}

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

// directives finds the lines that carry a silencing directive with a reason,
// and the positions of directives without one.
func directives(fset *token.FileSet, f *ast.File) (map[int]bool, []token.Pos) {
	ok := map[int]bool{}
	var bare []token.Pos
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			rest, found := strings.CutPrefix(cm.Text, Directive)
			if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
				continue
			}
			if strings.TrimSpace(rest) == "" {
				bare = append(bare, cm.Pos())
				continue
			}
			ok[fset.Position(cm.Pos()).Line] = true
		}
	}
	return ok, bare
}
