package wallclock

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// check reports the findings of one file.
func (c *checker) check(f *ast.File) {
	ok, bad := directives(c.pass.Fset, f)
	for _, d := range bad {
		c.pass.Report(d)
	}
	report := func(d analysis.Diagnostic) {
		line := c.pass.Fset.Position(d.Pos).Line
		if ok[line] || ok[line-1] {
			return
		}
		c.pass.Report(d)
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.BinaryExpr:
			c.checkBinary(n, stack[:len(stack)-1], report)
		case *ast.CallExpr:
			c.checkTimeCall(n, stack[:len(stack)-1], report)
		}
		return true
	})
}

func (c *checker) checkBinary(n *ast.BinaryExpr, parents []ast.Node, report func(analysis.Diagnostic)) {
	kx, ky := c.classify(n.X), c.classify(n.Y)
	if kx == wallInt && ky == passed || kx == passed && ky == wallInt {
		c.checkPassed(n, parents, report)
		return
	}
	if kx != wallInt || ky != wallInt {
		return
	}
	switch n.Op {
	case token.SUB:
		if comparator(c.pass.TypesInfo, parents) || c.rebase(n, parents) {
			return
		}
		d := analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: CategoryInterval, Message: fmt.Sprintf(
			"%s subtracts two wall-clock readings: a clock step changes this elapsed time by the step (a 12 s step back makes it 12 s short or negative); keep the time.Time from time.Now() and use time.Since, which uses the monotonic clock",
			c.render(n))}
		if fix, ok := c.sinceFix(n); ok {
			d.SuggestedFixes = []analysis.SuggestedFix{fix}
		}
		report(d)
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
		if comparator(c.pass.TypesInfo, parents) || c.minMax(n, parents) {
			return
		}
		if !c.current(n.X) && !c.current(n.Y) {
			if c.cfg.Ambiguous {
				report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: CategoryAmbiguous, Message: fmt.Sprintf(
					"%s orders two stored wall-clock readings (%s, lower severity): if it checks a deadline, a clock step moves it by the step; if it only orders them, a step does not matter; -ambiguous=false turns this category off",
					c.render(n), CategoryAmbiguous)})
			}
			return
		}
		report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: CategoryInterval, Message: fmt.Sprintf(
			"%s compares wall-clock readings for a deadline or an expiry: a clock step back postpones it by the step, a step forward brings it early; keep the deadline as a time.Time from time.Now().Add(d) and test time.Now().After(deadline)",
			c.render(n))})
	}
}

// checkPassed reports, in the lower-severity category, a reading subtracted
// from or compared with a time a caller in another package passed in: the
// caller may pass a deadline from time.Now().Add(d) (a step moves it) or an
// absolute time (an expiry from a server), which the analysis cannot tell.
func (c *checker) checkPassed(n *ast.BinaryExpr, parents []ast.Node, report func(analysis.Diagnostic)) {
	switch n.Op {
	case token.SUB, token.LSS, token.LEQ, token.GTR, token.GEQ:
	default:
		return
	}
	if !c.cfg.Ambiguous || comparator(c.pass.TypesInfo, parents) || c.minMax(n, parents) || n.Op == token.SUB && c.rebase(n, parents) {
		return
	}
	report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: CategoryAmbiguous, Message: fmt.Sprintf(
		"%s meets a wall-clock reading with a time.Time a caller in another package passes to an exported function (%s, lower severity): if callers pass a deadline made from time.Now(), a clock step moves it by the step (keep it a time.Time and use time.Until); if they pass an absolute time (an expiry from a server), the wall clock is right; -ambiguous=false turns this category off",
		c.render(n), CategoryAmbiguous)})
}

// calendarLoop reports whether call is the condition of a loop over calendar
// dates (for day := a.AddDate(0, 0, 1); day.Before(b); day = day.AddDate(0, 0,
// 1)): it walks between two wall times, it measures no interval.
func calendarLoop(call *ast.CallExpr, parents []ast.Node) bool {
	p, self := parent(call, parents)
	loop, ok := p.(*ast.ForStmt)
	if !ok || loop.Cond != self {
		return false
	}
	post, ok := loop.Post.(*ast.AssignStmt)
	if !ok || len(post.Lhs) != 1 || len(post.Rhs) != 1 {
		return false
	}
	step, ok := ast.Unparen(post.Rhs[0]).(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := ast.Unparen(step.Fun).(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "AddDate"
}

// comparator reports whether the innermost function around a node orders
// two values for a sort or a heap: a Less or Compare method, or a function
// literal passed to a call with two parameters of one type returning an int
// (slices.SortFunc) or a bool (sort.Slice, a btree's less), the parameters
// not interfaces (sync.Map.Range's callback is not a comparator).
// Ordering two readings is not a deadline: a step moves both.
func comparator(info *types.Info, parents []ast.Node) bool {
	for i := len(parents) - 1; i >= 0; i-- {
		switch fn := parents[i].(type) {
		case *ast.FuncDecl:
			switch fn.Name.Name {
			case "Less", "less", "Compare", "compare", "Cmp", "cmp":
				return true
			}
			return false
		case *ast.FuncLit:
			if i == 0 {
				return false
			}
			if _, ok := parents[i-1].(*ast.CallExpr); !ok {
				return false
			}
			sig, ok := info.TypeOf(fn).(*types.Signature)
			if !ok || sig.Params().Len() != 2 || sig.Results().Len() != 1 ||
				!types.Identical(sig.Params().At(0).Type(), sig.Params().At(1).Type()) {
				return false
			}
			b, ok := sig.Results().At(0).Type().Underlying().(*types.Basic)
			return ok && (b.Kind() == types.Int || b.Kind() == types.Bool && !types.IsInterface(sig.Params().At(0).Type()))
		}
	}
	return false
}

// parent is the node around parents' last one, past parentheses, and the
// child it holds.
func parent(n ast.Node, parents []ast.Node) (ast.Node, ast.Node) {
	for i := len(parents) - 1; i >= 0; i-- {
		if _, ok := parents[i].(*ast.ParenExpr); ok {
			n = parents[i]
			continue
		}
		return parents[i], n
	}
	return nil, n
}

// rebase reports whether the difference n of two readings only shifts
// another reading (off := now - t; t += off): the result is a reading again,
// judged where it is used, and no interval is decided here.
func (c *checker) rebase(n *ast.BinaryExpr, parents []ast.Node) bool {
	p, self := parent(n, parents)
	if c.shifts(p, self) {
		return true
	}
	as, ok := p.(*ast.AssignStmt)
	if !ok || (as.Tok != token.DEFINE && as.Tok != token.ASSIGN) || len(as.Lhs) != len(as.Rhs) {
		return false
	}
	var v *types.Var
	for i, r := range as.Rhs {
		if r == self {
			if id, ok := as.Lhs[i].(*ast.Ident); ok {
				v, _ = c.pass.TypesInfo.ObjectOf(id).(*types.Var)
			}
		}
	}
	if v == nil || v.Parent() == nil || v.Parent() == c.pass.Pkg.Scope() {
		return false
	}
	body := enclosingBody(parents)
	if body == nil {
		return false
	}
	uses, shifts := 0, true
	var stack []ast.Node
	ast.Inspect(body, func(m ast.Node) bool {
		if m == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, m)
		id, ok := m.(*ast.Ident)
		if !ok || c.pass.TypesInfo.Uses[id] != v {
			return true
		}
		q, qself := parent(id, stack[:len(stack)-1])
		if a, ok := q.(*ast.AssignStmt); ok && len(a.Lhs) == 1 && a.Lhs[0] == qself {
			return true // assigned again
		}
		uses++
		if !c.shifts(q, qself) {
			shifts = false
		}
		return true
	})
	return uses > 0 && shifts
}

// shifts reports whether the duration e is added to a reading by p.
func (c *checker) shifts(p, e ast.Node) bool {
	switch p := p.(type) {
	case *ast.BinaryExpr:
		switch {
		case p.Op == token.ADD && p.X == e:
			return c.classify(p.Y) == wallInt
		case p.Op == token.ADD && p.Y == e, p.Op == token.SUB && p.Y == e:
			return c.classify(p.X) == wallInt
		}
	case *ast.AssignStmt:
		if (p.Tok == token.ADD_ASSIGN || p.Tok == token.SUB_ASSIGN) && len(p.Rhs) == 1 && p.Rhs[0] == e {
			return c.classify(p.Lhs[0]) == wallInt
		}
	}
	return false
}

func enclosingBody(parents []ast.Node) *ast.BlockStmt {
	for i := len(parents) - 1; i >= 0; i-- {
		switch fn := parents[i].(type) {
		case *ast.FuncDecl:
			return fn.Body
		case *ast.FuncLit:
			return fn.Body
		}
	}
	return nil
}

// minMax reports whether the comparison n only picks one of its operands:
// if a < min { min = a }, if a > b { return a }. That is a min or a max;
// a step moves both operands alike.
func (c *checker) minMax(n *ast.BinaryExpr, parents []ast.Node) bool {
	p, _ := parent(n, parents)
	ifs, ok := p.(*ast.IfStmt)
	if !ok || ast.Unparen(ifs.Cond) != n {
		return false
	}
	x, y := c.render(ast.Unparen(n.X)), c.render(ast.Unparen(n.Y))
	operand := func(e ast.Expr) string {
		s := c.render(ast.Unparen(e))
		if s == x || s == y {
			return s
		}
		return ""
	}
	for _, st := range ifs.Body.List {
		switch st := st.(type) {
		case *ast.ReturnStmt:
			if len(st.Results) == 1 && operand(st.Results[0]) != "" {
				return true
			}
		case *ast.AssignStmt:
			if len(st.Lhs) != 1 || len(st.Rhs) != 1 || st.Tok != token.ASSIGN && st.Tok != token.DEFINE {
				continue
			}
			l, r := operand(st.Lhs[0]), operand(st.Rhs[0])
			if l != "" && r != "" && l != r {
				return true
			}
		}
	}
	return false
}

// current reports whether e is a reading taken for the computation at hand
// (a call, a local variable or a parameter) rather than one stored in a
// field, an element or a package variable. A deadline check compares such a
// reading ("now") with another; two stored readings compared may only be
// ordered.
func (c *checker) current(e ast.Expr) bool {
	info := c.pass.TypesInfo
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := info.ObjectOf(e).(*types.Var)
		return !ok || v.Parent() != c.pass.Pkg.Scope()
	case *ast.SelectorExpr:
		if sel := info.Selections[e]; sel != nil {
			return sel.Kind() != types.FieldVal
		}
		_, ok := info.ObjectOf(e.Sel).(*types.Var) // pkg.Var
		return !ok
	case *ast.IndexExpr, *ast.StarExpr:
		return false
	case *ast.BinaryExpr:
		return c.current(e.X) || c.current(e.Y)
	case *ast.CallExpr:
		if tv, ok := info.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 {
			return c.current(e.Args[0])
		}
		fn, _ := typeutil.Callee(info, e).(*types.Func)
		if fn == nil {
			return true
		}
		switch {
		case isTimeMethod(fn), atomicTypeMethod(fn):
			return c.current(recvOf(e))
		case fn.Pkg() != nil && fn.Pkg().Path() == "sync/atomic" && len(e.Args) > 0:
			return c.current(e.Args[0])
		}
		return true
	}
	return true
}

func (c *checker) checkTimeCall(call *ast.CallExpr, parents []ast.Node, report func(analysis.Diagnostic)) {
	fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if fn == nil || calendarLoop(call, parents) {
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
	case clockSince(fn):
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
	} else if fn.Signature().Recv() != nil {
		other = "the clock's Now()"
	}
	d := analysis.Diagnostic{Pos: call.Pos(), End: call.End(), Category: CategoryInterval, Message: fmt.Sprintf(
		"%s: %s has lost its monotonic reading (Round, Truncate, UTC, Local, In, AddDate, time.Unix or a marshal round trip drop it), so %s against %s uses the wall clock and a clock step changes the result; keep the time.Time from time.Now() as it is and strip it only to print or persist it",
		c.render(call), c.render(a), fn.Name(), other)}
	if fix, ok := c.unstripFix(a); ok {
		d.SuggestedFixes = []analysis.SuggestedFix{fix}
	}
	report(d)
}
