package wallclock

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"golang.org/x/tools/go/types/typeutil"
)

// target is the variable an assignment to e writes, if it is one the analysis
// follows: a variable, a field that is not data, or the container of an
// element.
func (c *checker) target(e ast.Expr) *types.Var {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, _ := c.pass.TypesInfo.ObjectOf(e).(*types.Var)
		return v
	case *ast.SelectorExpr:
		if sel := c.pass.TypesInfo.Selections[e]; sel != nil {
			if sel.Kind() != types.FieldVal || dataField(sel) {
				return nil
			}
			return sel.Obj().(*types.Var)
		}
		v, _ := c.pass.TypesInfo.ObjectOf(e.Sel).(*types.Var) // pkg.Var
		return v
	case *ast.IndexExpr:
		return c.target(e.X)
	case *ast.SliceExpr:
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

// dataField reports whether the selected field is data: a field with a tag
// that encodes it (json, protobuf, db, ...) is how decoded messages and
// persisted records arrive, so what it holds comes from elsewhere even when
// this package also fills it. A field every encoding skips (json:"-") is not
// data.
func dataField(sel interface {
	Recv() types.Type
	Index() []int
}) bool {
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
			return dataTag(st.Tag(fi))
		}
		t = st.Field(fi).Type()
	}
	return false
}

// notDataKeys are struct tag keys that say nothing about encoding.
var notDataKeys = map[string]bool{"validate": true, "default": true, "exhaustruct": true, "description": true, "doc": true, "jsonschema": true}

// dataTag reports whether a struct tag makes its field data: some key other
// than the ones that say nothing about encoding, with a name other than "-".
// A tag not in the conventional form counts as data.
func dataTag(tag string) bool {
	for {
		tag = strings.TrimLeft(tag, " ")
		if tag == "" {
			return false
		}
		i := 0
		for i < len(tag) && tag[i] > ' ' && tag[i] != ':' && tag[i] != '"' && tag[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(tag) || tag[i] != ':' || tag[i+1] != '"' {
			return true
		}
		key := tag[:i]
		tag = tag[i+1:]
		i = 1
		for i < len(tag) && tag[i] != '"' {
			if tag[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(tag) {
			return true
		}
		value, err := strconv.Unquote(tag[:i+1])
		if err != nil {
			return true
		}
		tag = tag[i+1:]
		if notDataKeys[key] {
			continue
		}
		if name, _, _ := strings.Cut(value, ","); name != "-" {
			return true
		}
	}
}

// classify says what the value of e is.
func (c *checker) classify(e ast.Expr) kind {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if v := c.target(e); v != nil {
			return c.varKind(v)
		}
	case *ast.SelectorExpr:
		if k, ok := c.clockField(e); ok {
			return k
		}
		if v := c.target(e); v != nil {
			return c.varKind(v)
		}
	case *ast.IndexExpr:
		return c.classify(e.X)
	case *ast.SliceExpr:
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
		case token.ADD, token.MUL:
			switch {
			case (l == wallInt) != (r == wallInt):
				return wallInt
			case l == wallInt && r == wallInt:
				return none
			case (l == passed) != (r == passed):
				return passed
			}
		case token.SUB, token.QUO:
			switch {
			case l == wallInt && r != wallInt && r != passed:
				return wallInt
			case l == passed && r != wallInt && r != passed:
				return passed
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
		return c.classify(call.Args[0]) // int64(x), time.Duration(x), []byte(s)
	}
	switch fn := typeutil.Callee(info, call).(type) {
	case *types.Builtin:
		if fn.Name() == "max" || fn.Name() == "min" || fn.Name() == "append" {
			k := none
			for _, a := range call.Args {
				k = join(k, c.classify(a))
			}
			return k
		}
		return none
	case *types.Var: // a function held in a variable or a field
		if _, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && c.target(call.Fun) == nil {
			return none // a field that is data
		}
		return c.funcKind(fn)
	case *types.Func:
		if k, ok := c.timeCall(fn, call); ok {
			return k
		}
		if k, ok := c.atomicLoad(fn, call); ok {
			return k
		}
		if k, ok := c.bytesCall(fn, call); ok {
			return k
		}
		if k, ok := c.containerLoad(fn, call); ok && k != none {
			return k
		}
		return c.funcResult(fn)
	case nil:
		return c.classifyFunc(call.Fun) // func() int64 { ... }(), f()()
	}
	return none
}

// funcResult is the first result of a call of fn, or of the function value fn.
func (c *checker) funcResult(fn *types.Func) kind {
	if k, ok := clockMethod(fn); ok {
		return k
	}
	if ks := c.resultKinds(fn); len(ks) > 0 {
		return ks[0]
	}
	return none
}

// classifyFunc says what the function value e returns when called.
func (c *checker) classifyFunc(e ast.Expr) kind {
	switch e := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		return c.lits[e]
	case *ast.Ident, *ast.SelectorExpr:
		var id *ast.Ident
		if sel, ok := e.(*ast.SelectorExpr); ok {
			id = sel.Sel
		} else {
			id = e.(*ast.Ident)
		}
		switch o := c.pass.TypesInfo.ObjectOf(id).(type) {
		case *types.Func:
			if o.Pkg() != nil && o.Pkg().Path() == "time" && o.Name() == "Now" && o.Signature().Recv() == nil {
				return mono
			}
			return c.funcResult(o)
		case *types.Var:
			if v := c.target(e); v != nil {
				return c.funcKind(v)
			}
		}
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
			if id, ok := ast.Unparen(recvOf(call)).(*ast.Ident); ok && k == none {
				if v, ok := c.pass.TypesInfo.Uses[id].(*types.Var); ok && c.foreign[v] {
					switch fn.Name() {
					case "Unix", "UnixMilli", "UnixMicro", "UnixNano":
						return passed, true
					}
				}
			}
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
	if fn.Signature().Recv() != nil {
		return none, true // Duration, Timer, Ticker, Location methods
	}
	switch fn.Name() {
	case "Now", "After", "Tick":
		return mono, true // After and Tick: channels of readings
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

// bytesCall follows a wall-clock number through bytes and text: binary's
// byte orders and varints, strconv's formatting and parsing.
func (c *checker) bytesCall(fn *types.Func, call *ast.CallExpr) (kind, bool) {
	if fn.Pkg() == nil {
		return none, false
	}
	arg := func(i int) kind {
		if i < len(call.Args) {
			return c.classify(call.Args[i])
		}
		return none
	}
	name := fn.Name()
	switch fn.Pkg().Path() {
	case "encoding/binary":
		switch {
		case name == "Uint64" || name == "Uint32" || name == "Varint" || name == "Uvarint":
			if arg(0) == wallBytes {
				return wallInt, true
			}
		case strings.HasPrefix(name, "Append"):
			if arg(1) == wallInt {
				return wallBytes, true
			}
		}
		return none, true
	case "strconv":
		switch name {
		case "FormatInt", "FormatUint", "Itoa":
			if arg(0) == wallInt {
				return wallBytes, true
			}
		case "AppendInt", "AppendUint":
			if arg(1) == wallInt {
				return wallBytes, true
			}
		case "ParseInt", "ParseUint", "Atoi":
			if arg(0) == wallBytes {
				return wallInt, true
			}
		}
		return none, true
	}
	return none, false
}
