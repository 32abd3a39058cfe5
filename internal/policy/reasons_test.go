package policy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clockwatch/clockwatch/stepdown"
)

// TestTableIsTheWiresList: the table has one row per reason the protocol
// lists (stepdown.TriggerReasons, the client module's), in its order: a
// reason added to one and not the other fails here.
func TestTableIsTheWiresList(t *testing.T) {
	t.Parallel()
	var got []stepdown.Reason
	for _, row := range TriggerTable() {
		got = append(got, row.Reason)
		if row.Kind == 0 {
			t.Errorf("%s: no kind", row.Reason)
		}
		_, global := settingField(reflect.ValueOf(&Triggers{}).Elem(), row.Key)
		_, perSource := settingField(reflect.ValueOf(&SourceTriggers{}).Elem(), row.Key)
		if !global || row.PerSource != perSource {
			t.Errorf("%s: a global setting, and a per-source one exactly when PerSource", row.Reason)
		}
		if row.figure.of != nil && (row.Kind != Level || row.figure.record == nil || row.figure.name == "") {
			t.Errorf("%s: a row with a figure is a level row, names its figure and records it in the event", row.Reason)
		}
		if row.verdict != nil && row.Kind != Graced {
			t.Errorf("%s: a row with a verdict is a graced row", row.Reason)
		}
		if row.Kind == Graced && row.text == nil {
			t.Errorf("%s: a graced trigger says what its condition means (text)", row.Reason)
		}
	}
	if diff := cmp.Diff(stepdown.TriggerReasons(), got); diff != "" {
		t.Errorf("trigger table against the wire's list (-wire +table):\n%s", diff)
	}
	for _, r := range []stepdown.Reason{stepdown.ReasonDrill, stepdown.ReasonStarting, "no_such_reason"} {
		if _, ok := Lookup(r); ok {
			t.Errorf("Lookup(%q) found a trigger", r)
		}
	}
}

// yamlKeys returns the YAML keys of a struct type's fields (those with a
// key), in order.
func yamlKeys(typ reflect.Type) []string {
	var keys []string
	for i := range typ.NumField() {
		if k, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestTableIsTheConfiguration: every row's Key is a key of Triggers (and of
// SourceTriggers when PerSource), every key of theirs is a row's, and each
// row reads the field its key names: a trigger configured but not in the
// table, or in the table and not configurable, fails here.
func TestTableIsTheConfiguration(t *testing.T) {
	t.Parallel()
	var global, perSource []string
	for _, row := range TriggerTable() {
		global = append(global, row.Key)
		if row.PerSource {
			perSource = append(perSource, row.Key)
		}
	}
	if diff := cmp.Diff(yamlKeys(reflect.TypeFor[Triggers]()), global); diff != "" {
		t.Errorf("stepdown.triggers keys against the table (-Triggers +table):\n%s", diff)
	}
	if diff := cmp.Diff(yamlKeys(reflect.TypeFor[SourceTriggers]()), perSource, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("a source's own triggers against the table's per-source rows (-SourceTriggers +table):\n%s", diff)
	}
	// Each row reads its own field: set that one field alone (through its
	// YAML key) and the row, only the row, sees it.
	for i, row := range TriggerTable() {
		var ts Triggers
		var st SourceTriggers
		set := func(v reflect.Value) {
			for j := range v.NumField() {
				if k, _, _ := strings.Cut(v.Type().Field(j).Tag.Get("yaml"), ","); k == row.Key {
					f := v.Field(j)
					f.FieldByName("Enabled").SetBool(true)
					for _, name := range []string{"Threshold", "Grace"} {
						if d := f.FieldByName(name); d.IsValid() {
							d.Set(reflect.ValueOf(time.Duration(i + 1)))
						}
					}
				}
			}
		}
		set(reflect.ValueOf(&ts).Elem())
		set(reflect.ValueOf(&st).Elem())
		for _, other := range TriggerTable() {
			got := other.global(ts)
			if r, ok := resolve(ts).of(Condition{Reason: other.Reason}); !ok || r != got {
				t.Errorf("with only %s set, the %s row's resolved setting is %+v, its own %+v", row.Key, other.Key, r, got)
			}
			if want := other.Reason == row.Reason; got.Enabled != want {
				t.Errorf("with only %s set, the %s row reads enabled=%v", row.Key, other.Key, got.Enabled)
			}
			if other.Reason == row.Reason && got.Unit != "" && got.Limit != time.Duration(i+1) {
				t.Errorf("%s row reads %s %s, want %s", row.Key, got.Unit, got.Limit, time.Duration(i+1))
			}
			if other.PerSource && other.Reason == row.Reason {
				if got := other.source(st); !got.Enabled || got.Limit != time.Duration(i+1) {
					t.Errorf("%s row reads a source's own setting %+v", row.Key, got)
				}
				// Triggers.For (a source's triggers, as the configuration
				// reads them) agrees with the row.
				ts.Sources = map[string]SourceTriggers{"ptp4l": st}
				if fromFor := other.source(ts.For("ntpd")); fromFor != other.Setting(ts, "ntpd") {
					t.Errorf("%s: Triggers.For and the row disagree for a source without its own", row.Key)
				}
				if fromFor := other.source(ts.For("ptp4l")); fromFor != other.Setting(ts, "ptp4l") {
					t.Errorf("%s: Triggers.For and the row disagree for a source with its own", row.Key)
				}
				// The policy's resolved settings (what its judges
				// read) agree with the row, with and without a
				// source's own.
				for _, src := range []string{"ntpd", "ptp4l"} {
					if got, ok := resolve(ts).of(Condition{other.Reason, src}); !ok || got != other.Setting(ts, src) {
						t.Errorf("%s: the resolved setting for %s is %+v, the row's %+v", row.Key, src, got, other.Setting(ts, src))
					}
				}
			}
		}
	}
}

// TestEveryTriggerOnByDefault: DefaultTriggers turns every row on, with a
// positive magnitude, and validates.
func TestEveryTriggerOnByDefault(t *testing.T) {
	t.Parallel()
	d := DefaultTriggers()
	for _, row := range TriggerTable() {
		if s := row.global(d); !s.Enabled || (s.Unit != "" && s.Limit <= 0) {
			t.Errorf("default %s: %+v", row.Key, s)
		}
	}
	if err := d.Validate("stepdown.triggers"); err != nil {
		t.Error(err)
	}
}

// TestValidateNamesEveryTrigger: a zero magnitude on any enabled trigger is
// an error naming its YAML path, from the table.
func TestValidateNamesEveryTrigger(t *testing.T) {
	t.Parallel()
	var ts Triggers
	var st SourceTriggers
	enable := func(v reflect.Value) {
		for j := range v.NumField() {
			if f := v.Field(j); f.Kind() == reflect.Struct {
				f.FieldByName("Enabled").SetBool(true)
			}
		}
	}
	enable(reflect.ValueOf(&ts).Elem())
	enable(reflect.ValueOf(&st).Elem())
	want := []string{
		"x.step.threshold: must be positive when enabled, got 0s",
		"x.offset.threshold: must be positive when enabled, got 0s",
		"x.unsynchronized.grace: must be positive when enabled, got 0s",
		"x.error_bound.threshold: must be positive when enabled, got 0s",
		"x.probe_lost.grace: must be positive when enabled, got 0s",
		"x.suspend.threshold: must be positive when enabled, got 0s",
		"x.peer_offset.grace: must be positive when enabled, got 0s",
	}
	if diff := cmp.Diff(want, strings.Split(ts.Validate("x").Error(), "\n")); diff != "" {
		t.Errorf("Triggers.Validate (-want +got):\n%s", diff)
	}
	want = []string{
		"ptp.triggers.offset.threshold: must be positive when enabled, got 0s",
		"ptp.triggers.unsynchronized.grace: must be positive when enabled, got 0s",
		"ptp.triggers.error_bound.threshold: must be positive when enabled, got 0s",
	}
	if diff := cmp.Diff(want, strings.Split(st.Validate("ptp.triggers").Error(), "\n")); diff != "" {
		t.Errorf("SourceTriggers.Validate (-want +got):\n%s", diff)
	}
}

// TestDisrupts: the segment's judge reads the table: a step and a suspend
// moved the clock, and a VM disruption (a migration, a snapshot restored)
// did (a drill rehearses it); nothing else did.
func TestDisrupts(t *testing.T) {
	t.Parallel()
	got := map[stepdown.Reason]bool{}
	for _, r := range append(stepdown.DrillReasons(), stepdown.ReasonStarting, "no_such_reason") {
		got[r] = Disrupts(r)
	}
	want := map[stepdown.Reason]bool{
		stepdown.ReasonDrill: true, stepdown.ReasonStep: true, stepdown.ReasonSuspend: true,
		stepdown.ReasonOffset: false, stepdown.ReasonUnsynchronized: false, stepdown.ReasonErrorBound: false,
		stepdown.ReasonProbeLost: false, stepdown.ReasonGrandmasterChanged: false, stepdown.ReasonStarting: false,
		stepdown.ReasonVMDisruption: true, stepdown.ReasonPeerOffset: false,
		"no_such_reason": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Disrupts (-want +got):\n%s", diff)
	}
}

// TestWireConstantsAreRows: every Reason constant of the wire
// (stepdown/wire.go, read as source: the client module cannot import the
// table) is a row's reason, or one of the reasons no trigger raises. A
// constant added for a new trigger with neither a row nor a list entry
// fails here, not only in a client that meets it.
func TestWireConstantsAreRows(t *testing.T) {
	t.Parallel()
	notTriggers := map[stepdown.Reason]bool{stepdown.ReasonDrill: true, stepdown.ReasonStarting: true, stepdown.ReasonPeerUnreachable: true}
	f, err := parser.ParseFile(token.NewFileSet(), "../../stepdown/wire.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []stepdown.Reason
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Reason" {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					consts = append(consts, stepdown.Reason(s))
				}
			}
		}
		return true
	})
	if len(consts) < len(TriggerTable())+len(notTriggers) {
		t.Fatalf("found only %d Reason constants in stepdown/wire.go: %v", len(consts), consts)
	}
	for _, r := range consts {
		if _, ok := Lookup(r); !ok && !notTriggers[r] {
			t.Errorf("stepdown.Reason %q is no row of the trigger table (and not drill, starting or peer_unreachable)", r)
		}
	}
}

// yamlDuration writes d as the documentation's YAML does: 1ms, 10s, 1m.
func yamlDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// TestTableIsDocumented: every row has its line in the configuration's
// table (its key and its default, from the row) and in the protocol's
// table of reasons (its reason and the setting that tunes it).
func TestTableIsDocumented(t *testing.T) {
	t.Parallel()
	config, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	protocol, err := os.ReadFile("../../docs/stepdown-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	line := func(doc []byte, prefix string) string {
		for _, l := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		return ""
	}
	d := DefaultTriggers()
	for _, row := range TriggerTable() {
		s := row.global(d)
		def := fmt.Sprintf("{enabled: %v}", s.Enabled)
		setting := row.Key + ".enabled"
		if s.Unit != "" {
			def = fmt.Sprintf("{enabled: %v, %s: %s}", s.Enabled, s.Unit, yamlDuration(s.Limit))
			setting = row.Key + "." + s.Unit
		}
		if want := fmt.Sprintf("| `triggers.%s` | `%s` |", row.Key, def); line(config, want) == "" {
			t.Errorf("docs/configuration.md has no line starting %q", want)
		}
		l := line(protocol, fmt.Sprintf("| `%s` |", row.Reason))
		if !strings.Contains(l, "`"+setting+"`") {
			t.Errorf("docs/stepdown-protocol.md: the line of reason %s does not name `%s`: %q", row.Reason, setting, l)
		}
	}
}
