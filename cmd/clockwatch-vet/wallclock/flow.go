package wallclock

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/types/typeutil"
)

// propagate records, for one file, every way a reading flows into a variable,
// a field, a map's keys, a function value, a parameter or a result.
func (c *checker) propagate(f *ast.File) {
	var funcs []ast.Node // enclosing *ast.FuncDecl and *ast.FuncLit
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
		case *ast.FuncDecl, *ast.FuncLit:
			funcs = append(funcs, n)
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				c.mapKey(l)
			}
			if n.Tok != token.ASSIGN && n.Tok != token.DEFINE {
				break
			}
			c.assignAll(n.Lhs, n.Rhs)
		case *ast.IncDecStmt:
			c.mapKey(n.X)
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
			c.rangeStmt(n)
		case *ast.ReturnStmt:
			if len(funcs) > 0 {
				c.returnStmt(funcs[len(funcs)-1], n)
			}
		case *ast.CallExpr:
			c.call(n)
		}
		return true
	})
}

// mapKey records the key of a map element written to (m[k] = v, m[k]++).
func (c *checker) mapKey(e ast.Expr) {
	ix, ok := ast.Unparen(e).(*ast.IndexExpr)
	if !ok {
		return
	}
	if _, ok := c.pass.TypesInfo.TypeOf(ix.X).Underlying().(*types.Map); ok {
		c.setKey(c.target(ix.X), c.classify(ix.Index))
	}
}

func (c *checker) rangeStmt(n *ast.RangeStmt) {
	t := c.pass.TypesInfo.TypeOf(n.X)
	if t == nil {
		return
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t.Underlying().(type) {
	case *types.Map:
		if n.Key != nil {
			c.setVar(c.target(n.Key), c.keyKind(c.target(n.X)))
		}
		if n.Value != nil {
			c.setVar(c.target(n.Value), c.classify(n.X))
		}
	case *types.Chan:
		if n.Key != nil {
			c.setVar(c.target(n.Key), c.classify(n.X))
		}
	case *types.Slice, *types.Array:
		if n.Value != nil {
			c.setVar(c.target(n.Value), c.classify(n.X))
		}
	}
}

func (c *checker) returnStmt(fn ast.Node, n *ast.ReturnStmt) {
	switch fn := fn.(type) {
	case *ast.FuncLit:
		if len(n.Results) > 0 {
			c.setLit(fn, c.classify(n.Results[0]))
		}
	case *ast.FuncDecl:
		obj, _ := c.pass.TypesInfo.Defs[fn.Name].(*types.Func)
		if obj == nil {
			return
		}
		res := obj.Signature().Results()
		nres := res.Len()
		if len(n.Results) == nres {
			for i, r := range n.Results {
				c.setResult(obj, i, nres, c.classify(r))
			}
		} else if len(n.Results) == 0 {
			for i := range nres {
				c.setResult(obj, i, nres, c.varKind(res.At(i)))
			}
		}
	}
}

func isFunc(t types.Type) bool {
	if t == nil {
		return false
	}
	_, ok := t.Underlying().(*types.Signature)
	return ok
}

// flow records what the value e written into v is: a reading, or a function
// that returns one.
func (c *checker) flow(v *types.Var, e ast.Expr) {
	if v == nil {
		return
	}
	if isFunc(v.Type()) {
		c.setFunc(v, c.classifyFunc(e))
		return
	}
	c.setVar(v, c.classify(e))
}

func (c *checker) assignAll(lhs, rhs []ast.Expr) {
	switch {
	case len(lhs) == len(rhs):
		for i := range lhs {
			c.flow(c.target(lhs[i]), rhs[i])
		}
	case len(rhs) == 1:
		r := ast.Unparen(rhs[0])
		if call, ok := r.(*ast.CallExpr); ok {
			if fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func); ok {
				if p := fn.Pkg(); p != nil {
					switch p.Path() {
					case "time", "sync/atomic", "strconv", "encoding/binary":
						// b, err := t.MarshalText(); t, err := time.Parse(...); old, ok := atomic...; n, err := strconv.ParseInt(...)
						c.setVar(c.target(lhs[0]), c.classifyCall(call))
						return
					}
				}
				ks := c.resultKinds(fn)
				if k, ok := clockMethod(fn); ok {
					ks = []kind{k}
				}
				if k, ok := c.containerLoad(fn, call); ok && k != none {
					ks = []kind{k}
				}
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
		if fi < 0 || fi >= st.NumFields() || dataTag(st.Tag(fi)) {
			continue
		}
		c.flow(st.Field(fi), val)
	}
}

// call follows readings into the parameters of this package's functions, into
// atomics, through bytes and through Unmarshal round trips.
func (c *checker) call(call *ast.CallExpr) {
	fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if fn == nil {
		return
	}
	switch {
	case containerStores[fn.Name()] && c.foreignMethod(fn) && len(call.Args) > 0:
		c.setVar(c.target(recvOf(call)), c.classify(call.Args[len(call.Args)-1]))
	case fn.Pkg() == c.pass.Pkg:
		c.params(fn.Origin().Type(), call)
		// A call through an interface passes its arguments to the
		// implementations of this package (gocron's jobSchedule.next).
		for _, im := range c.impls {
			if im.abstract == fn.Origin() && im.concrete.Pkg() == c.pass.Pkg {
				c.params(im.concrete.Type(), call)
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
	case fn.Pkg() != nil && fn.Pkg().Path() == "encoding/binary":
		// binary.BigEndian.PutUint64(buf, uint64(now)), binary.PutVarint(buf, now)
		if strings.HasPrefix(fn.Name(), "Put") && len(call.Args) == 2 && c.classify(call.Args[1]) == wallInt {
			c.setVar(c.target(call.Args[0]), wallBytes)
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

// params follows the arguments of a call into the parameters of the
// function called, declared in this package.
func (c *checker) params(t types.Type, call *ast.CallExpr) {
	sig, ok := t.Underlying().(*types.Signature)
	if !ok {
		return
	}
	n := sig.Params().Len()
	for i, a := range call.Args {
		pi := i
		if sig.Variadic() && pi >= n-1 {
			pi = n - 1
		}
		if pi < n {
			c.flow(sig.Params().At(pi), a)
		}
	}
}
