package wallclock

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Analyzer is the wall-clock timing check with its default settings; its
// -ambiguous flag turns the lower-severity category off.
var Analyzer = New(Config{Ambiguous: true})

// Config are the analyzer's settings.
type Config struct {
	// Ambiguous reports the lower-severity category too: two stored readings
	// ordered outside a sort, a heap or a min/max (CategoryAmbiguous).
	Ambiguous bool
}

// The diagnostics' categories.
const (
	// CategoryInterval is an interval, a timeout, a deadline or an expiry
	// decided by the wall clock.
	CategoryInterval = "wallclock"
	// CategoryAmbiguous is a comparison of two stored readings that is not
	// plainly a sort, a heap, a min or a max: it may order them (harmless) or
	// check one against the other (a deadline).
	CategoryAmbiguous = "wallclock-ambiguous"
	// CategoryDirective is a directive without a reason or misspelt.
	CategoryDirective = "wallclock-directive"
)

// New returns the analyzer with the given settings (the golangci-lint
// plugin's settings arrive this way; clockwatch-vet's as flags).
func New(cfg Config) *analysis.Analyzer {
	a := &analysis.Analyzer{
		Name:      "wallclock",
		Doc:       "report intervals, deadlines and expiries computed from wall-clock readings\n\nA clock step (chronyd's makestep, an operator's date -s, a VM resumed from a snapshot) moves every wall-clock reading by the step; time.Since on a time.Time from time.Now() uses the monotonic reading and does not move. Silence a reviewed line with //clockwatch:wallclock-ok reason.",
		URL:       "https://github.com/clockwatch/clockwatch/blob/main/docs/audit.md",
		FactTypes: []analysis.Fact{new(readingFact), new(ifaceFact)},
	}
	ambiguous := a.Flags.Bool("ambiguous", cfg.Ambiguous, "also report "+CategoryAmbiguous+": two stored readings ordered outside a sort, a heap, a min or a max")
	a.Run = func(pass *analysis.Pass) (any, error) { return run(pass, Config{Ambiguous: *ambiguous}) }
	return a
}

// Directive silences a finding on its line or the line below it.
const Directive = "//clockwatch:wallclock-ok"

// kind is what a value is, as far as clocks go. The order matters: joining
// two kinds keeps the greater one, so a variable that is assigned a stripped
// reading anywhere counts as stripped.
type kind uint8

const (
	none      kind = iota
	passed         // a wall-clock number from a time.Time a caller in another package passed in: a deadline or an absolute time
	mono           // a time.Time from a clock's Now() that keeps its monotonic reading
	stripped       // a local time.Time without its monotonic reading
	formatted      // text or bytes made from a local time.Time (Format, MarshalText, ...)
	wallBytes      // bytes or text holding a wall-clock number (binary.PutUint64, strconv.FormatInt)
	wallInt        // a wall-clock reading as a number (Unix, UnixMilli, ... and arithmetic on it)
)

func (k kind) local() bool { return k == mono || k == stripped }

func join(a, b kind) kind {
	if a > b {
		return a
	}
	return b
}

func (k kind) String() string {
	switch k {
	case passed:
		return "passed"
	case mono:
		return "reading"
	case stripped:
		return "stripped"
	case formatted:
		return "formatted"
	case wallBytes:
		return "wallbytes"
	case wallInt:
		return "wallint"
	}
	return "-"
}

// readingFact carries what a package's functions return and its variables and
// fields hold to the packages that import it.
type readingFact struct {
	Kind    kind   // a variable's or field's kind; a container's elements
	Key     kind   // a map's keys
	Func    kind   // what the function a variable or field holds returns
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
	var parts []string
	if f.Kind != none {
		parts = append(parts, "holds "+f.Kind.String())
	}
	if f.Key != none {
		parts = append(parts, "keys "+f.Key.String())
	}
	if f.Func != none {
		parts = append(parts, "func "+f.Func.String())
	}
	return strings.Join(parts, " ")
}

// ifaceFact is a package fact: the methods of interfaces declared in other
// packages that a type of this package implements with a reading, keyed by
// the interface method's full name ("(pkg.Clock).NowMillis"). A call through
// the interface in a package that imports this one is then a reading.
type ifaceFact struct {
	Methods map[string][]kind
}

func (*ifaceFact) AFact() {}

func (f *ifaceFact) String() string {
	var ss []string
	for m, ks := range f.Methods {
		s := make([]string, len(ks))
		for i, k := range ks {
			s[i] = k.String()
		}
		ss = append(ss, m+" returns "+strings.Join(s, ","))
	}
	return strings.Join(ss, "; ")
}

type checker struct {
	pass    *analysis.Pass
	cfg     Config
	vars    map[*types.Var]kind // variables, fields, parameters; containers hold their elements' kind
	keys    map[*types.Var]kind // the keys of maps
	funcs   map[*types.Var]kind // variables and fields holding functions: what those return
	lits    map[*ast.FuncLit]kind
	results map[*types.Func][]kind // declared functions and methods, and interface methods learned from implementations
	impls   []impl
	foreign map[*types.Var]bool // time.Time parameters of exported functions: callers elsewhere pass them
	ifaces  map[string][]kind   // interface methods implemented with readings elsewhere (package facts)
	changed bool
}

// impl is a concrete method of this package that implements an interface
// method: what it returns, calls through the interface return.
type impl struct{ concrete, abstract *types.Func }

func run(pass *analysis.Pass, cfg Config) (any, error) {
	c := &checker{
		pass: pass, cfg: cfg,
		vars: map[*types.Var]kind{}, keys: map[*types.Var]kind{}, funcs: map[*types.Var]kind{},
		lits: map[*ast.FuncLit]kind{}, results: map[*types.Func][]kind{}, ifaces: map[string][]kind{},
	}
	for _, pf := range pass.AllPackageFacts() {
		if f, ok := pf.Fact.(*ifaceFact); ok {
			for m, ks := range f.Methods {
				c.ifaces[m] = joinKinds(c.ifaces[m], ks)
			}
		}
	}
	c.impls = implementations(pass)
	c.foreign = foreignParams(pass)
	// Flow-insensitive propagation: repeat until no variable changes kind.
	// Each round can only raise a kind, so it ends; the cap is a guard.
	for range 32 {
		c.changed = false
		for _, f := range pass.Files {
			c.propagate(f)
		}
		for _, im := range c.impls {
			for i, k := range c.resultKinds(im.concrete) {
				c.setResult(im.abstract, i, im.abstract.Signature().Results().Len(), k)
			}
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

// foreignParams are the time.Time parameters of this package's exported
// functions and methods: another package may pass a deadline made from
// time.Now() (a reading the analysis cannot see) or an absolute time.
func foreignParams(pass *analysis.Pass) map[*types.Var]bool {
	out := map[*types.Var]bool{}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			for _, fld := range fd.Type.Params.List {
				for _, n := range fld.Names {
					if v, ok := pass.TypesInfo.Defs[n].(*types.Var); ok && isTimeType(v.Type(), "Time") {
						out[v] = true
					}
				}
			}
		}
	}
	return out
}

func joinKinds(a, b []kind) []kind {
	out := append([]kind(nil), a...)
	for i, k := range b {
		if i < len(out) {
			out[i] = join(out[i], k)
		} else {
			out = append(out, k)
		}
	}
	return out
}

func (c *checker) exportFacts() {
	// Only exported names can be reached from another package.
	reach := func(v *types.Var) bool {
		return v.Exported() && v.Pkg() == c.pass.Pkg && (v.IsField() || v.Parent() == c.pass.Pkg.Scope())
	}
	facts := map[*types.Var]*readingFact{}
	fact := func(v *types.Var) *readingFact {
		if facts[v] == nil {
			facts[v] = &readingFact{}
		}
		return facts[v]
	}
	for v, k := range c.vars {
		if reach(v) {
			fact(v).Kind = k
		}
	}
	for v, k := range c.keys {
		if reach(v) {
			fact(v).Key = k
		}
	}
	for v, k := range c.funcs {
		if reach(v) {
			fact(v).Func = k
		}
	}
	for v, f := range facts {
		c.pass.ExportObjectFact(v, f)
	}
	elsewhere := map[string][]kind{}
	for fn, ks := range c.results {
		switch {
		case fn.Pkg() == c.pass.Pkg && fn.Exported():
			c.pass.ExportObjectFact(fn, &readingFact{Results: ks})
		case fn.Pkg() != c.pass.Pkg:
			elsewhere[fn.FullName()] = ks
		}
	}
	if len(elsewhere) > 0 {
		c.pass.ExportPackageFact(&ifaceFact{Methods: elsewhere})
	}
}

// varKind is what v holds, from this package's assignments or from a fact.
func (c *checker) varKind(v *types.Var) kind {
	if k, ok := c.vars[v]; ok {
		return k
	}
	if f := c.fact(v); f != nil {
		return f.Kind
	}
	return none
}

func (c *checker) keyKind(v *types.Var) kind {
	if k, ok := c.keys[v]; ok {
		return k
	}
	if f := c.fact(v); f != nil {
		return f.Key
	}
	return none
}

func (c *checker) funcKind(v *types.Var) kind {
	if k, ok := c.funcs[v]; ok {
		return k
	}
	if f := c.fact(v); f != nil {
		return f.Func
	}
	return none
}

func (c *checker) fact(v *types.Var) *readingFact {
	if v == nil || v.Pkg() == nil || v.Pkg() == c.pass.Pkg {
		return nil
	}
	var f readingFact
	if c.pass.ImportObjectFact(v.Origin(), &f) {
		return &f
	}
	return nil
}

func (c *checker) resultKinds(fn *types.Func) []kind {
	fn = fn.Origin()
	if ks, ok := c.results[fn]; ok {
		return ks
	}
	if fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg {
		var f readingFact
		if c.pass.ImportObjectFact(fn, &f) {
			return f.Results
		}
	}
	if isInterfaceMethod(fn) {
		return c.ifaces[fn.FullName()]
	}
	return nil
}

func set(m map[*types.Var]kind, v *types.Var, k kind) bool {
	if v == nil || k == none || v.Name() == "_" {
		return false
	}
	if old := m[v]; join(old, k) != old {
		m[v] = join(old, k)
		return true
	}
	return false
}

func (c *checker) setVar(v *types.Var, k kind) {
	if set(c.vars, v, k) {
		c.changed = true
	}
}

func (c *checker) setKey(v *types.Var, k kind) {
	if set(c.keys, v, k) {
		c.changed = true
	}
}

func (c *checker) setFunc(v *types.Var, k kind) {
	if set(c.funcs, v, k) {
		c.changed = true
	}
}

func (c *checker) setLit(lit *ast.FuncLit, k kind) {
	if old := c.lits[lit]; join(old, k) != old {
		c.lits[lit] = join(old, k)
		c.changed = true
	}
}

func (c *checker) setResult(fn *types.Func, i, n int, k kind) {
	if k == none || fn == nil {
		return
	}
	fn = fn.Origin()
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
