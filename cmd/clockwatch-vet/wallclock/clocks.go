package wallclock

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// clockPackages are the clock libraries modelled by name: whatever their
// types' Now returns is a reading, their Since and Until are time.Since and
// time.Until, and their tickers and timers deliver readings.
var clockPackages = map[string]bool{
	"github.com/benbjohnson/clock":      true,
	"github.com/andres-erbsen/clock":    true,
	"github.com/jonboulle/clockwork":    true,
	"k8s.io/utils/clock":                true,
	"k8s.io/utils/clock/testing":        true,
	"code.cloudfoundry.org/clock":       true,
	"github.com/juju/clock":             true,
	"github.com/facebookgo/clock":       true,
	"github.com/coder/quartz":           true,
	"github.com/thejerf/abtime":         true,
	"github.com/tilinna/clock":          true,
	"github.com/efficientgo/core/clock": true,
}

func isTimeType(t types.Type, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == name
}

// isTimeChan reports whether t is a channel of time.Time.
func isTimeChan(t types.Type) bool {
	ch, ok := t.Underlying().(*types.Chan)
	return ok && isTimeType(ch.Elem(), "Time")
}

func isInterfaceMethod(fn *types.Func) bool {
	recv := fn.Signature().Recv()
	return recv != nil && types.IsInterface(recv.Type())
}

// isClock reports whether fn is a method of an interface or of a clock
// library: its body is not there to read, so the shape of its signature
// says what it returns.
func isClock(fn *types.Func) bool {
	if fn.Signature().Recv() == nil {
		return false
	}
	return isInterfaceMethod(fn) || fn.Pkg() != nil && clockPackages[fn.Pkg().Path()]
}

// clockMethod classifies the methods of clocks behind interfaces and of the
// clock libraries: Now() time.Time is a reading (a fake clock in a test is
// a reading too: the code under test treats it as one), a method returning a
// channel of time.Time (After, Tick, a ticker's Chan) delivers readings.
func clockMethod(fn *types.Func) (kind, bool) {
	if !isClock(fn) {
		return none, false
	}
	sig := fn.Signature()
	if sig.Results().Len() != 1 {
		return none, false
	}
	r := sig.Results().At(0).Type()
	switch {
	case fn.Name() == "Now" && sig.Params().Len() == 0 && isTimeType(r, "Time"):
		return mono, true
	case isTimeChan(r):
		return mono, true
	}
	return none, false
}

// clockSince reports whether fn is Since or Until of package time, of an
// interface or of a clock library: the argument meets the clock's Now.
func clockSince(fn *types.Func) bool {
	if fn.Name() != "Since" && fn.Name() != "Until" {
		return false
	}
	sig := fn.Signature()
	if sig.Params().Len() != 1 || !isTimeType(sig.Params().At(0).Type(), "Time") {
		return false
	}
	if sig.Recv() == nil {
		return fn.Pkg() != nil && fn.Pkg().Path() == "time"
	}
	return isClock(fn)
}

// clockField classifies the C of time's and the clock libraries' tickers and
// timers: a channel of readings.
func (c *checker) clockField(e *ast.SelectorExpr) (kind, bool) {
	sel := c.pass.TypesInfo.Selections[e]
	if sel == nil || sel.Kind() != types.FieldVal {
		return none, false
	}
	f := sel.Obj()
	if f.Pkg() == nil || f.Pkg().Path() != "time" && !clockPackages[f.Pkg().Path()] {
		return none, false
	}
	if isTimeChan(f.Type()) {
		return mono, true
	}
	return none, false
}

// mayRead reports whether a method's results could carry a reading: a
// time.Time, a number or a channel of time.Time.
func mayRead(fn *types.Func) bool {
	res := fn.Signature().Results()
	for i := range res.Len() {
		t := res.At(i).Type()
		if isTimeType(t, "Time") || isTimeChan(t) {
			return true
		}
		if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&types.IsNumeric != 0 {
			return true
		}
	}
	return false
}

// implementations pairs the methods of this package's types with the
// methods of the interfaces (of this package and the packages it imports)
// they implement, for the methods that could return a reading: a project's
// own clock behind its own interface (NowMillis() int64) is learned this way.
func implementations(pass *analysis.Pass) []impl {
	byName := map[string][]*types.Named{}
	scopes := []*types.Scope{pass.Pkg.Scope()}
	for _, p := range pass.Pkg.Imports() {
		scopes = append(scopes, p.Scope())
	}
	for _, s := range scopes {
		for _, name := range s.Names() {
			n := namedType(s.Lookup(name))
			if n == nil {
				continue
			}
			it, ok := n.Underlying().(*types.Interface)
			if !ok {
				continue
			}
			for i := range it.NumMethods() {
				byName[it.Method(i).Name()] = append(byName[it.Method(i).Name()], n)
			}
		}
	}
	var out []impl
	s := pass.Pkg.Scope()
	for _, name := range s.Names() {
		n := namedType(s.Lookup(name))
		if n == nil || types.IsInterface(n) {
			continue
		}
		ptr := types.NewPointer(n)
		ms := types.NewMethodSet(ptr)
		implements := map[*types.Named]bool{}
		for i := range ms.Len() {
			m, ok := ms.At(i).Obj().(*types.Func)
			if !ok || !mayRead(m) {
				continue
			}
			for _, iface := range byName[m.Name()] {
				ok, seen := implements[iface]
				if !seen {
					ok = types.Implements(ptr, iface.Underlying().(*types.Interface))
					implements[iface] = ok
				}
				if !ok {
					continue
				}
				if abs, _, _ := types.LookupFieldOrMethod(iface, false, m.Pkg(), m.Name()); abs != nil {
					if af, ok := abs.(*types.Func); ok && af != m {
						out = append(out, impl{concrete: m, abstract: af})
					}
				}
			}
		}
	}
	return out
}

// namedType is the non-generic named type obj declares, if it declares one.
func namedType(obj types.Object) *types.Named {
	tn, ok := obj.(*types.TypeName)
	if !ok || tn.IsAlias() {
		return nil
	}
	n, ok := tn.Type().(*types.Named)
	if !ok || n.TypeParams().Len() > 0 {
		return nil
	}
	return n
}

// Methods of containers of other packages (a queue, a sync.Map, a ring
// buffer): what is stored through one comes back through the other. Their
// bodies are in another package, where a parameter cannot be followed.
var (
	containerStores = map[string]bool{"Push": true, "PushBack": true, "PushFront": true, "Put": true, "Set": true, "Add": true, "Store": true, "Enqueue": true, "Insert": true, "Offer": true, "Swap": true, "LoadOrStore": true}
	containerLoads  = map[string]bool{"Get": true, "Peek": true, "Pop": true, "Load": true, "Dequeue": true, "Front": true, "Back": true, "Poll": true, "Swap": true, "LoadOrStore": true, "LoadAndDelete": true}
)

// foreignMethod reports whether fn is a method whose body the analysis does
// not follow parameters into: an interface's, or one declared in another
// package (other than time's and the atomics', modelled on their own).
func (c *checker) foreignMethod(fn *types.Func) bool {
	if fn.Signature().Recv() == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg && !isInterfaceMethod(fn) {
		return false
	}
	p := fn.Pkg().Path()
	return p != "time" && p != "sync/atomic" && !clockPackages[p]
}

// containerLoad is what a load from a container of another package returns:
// what was stored into it.
func (c *checker) containerLoad(fn *types.Func, call *ast.CallExpr) (kind, bool) {
	if !containerLoads[fn.Name()] || !c.foreignMethod(fn) {
		return none, false
	}
	v := c.target(recvOf(call))
	if v == nil {
		return none, false
	}
	return c.varKind(v), true
}
