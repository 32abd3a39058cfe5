package golangci_test

import (
	"strings"
	"testing"

	"github.com/golangci/plugin-module-register/register"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/golangci"
	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

// TestRegistered loads the plugin the way golangci-lint does: by name from
// the registry, with the settings of .golangci.yml.
func TestRegistered(t *testing.T) {
	t.Parallel()
	newPlugin, err := register.GetPlugin(golangci.Name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlugin(map[string]any{})
	if err != nil {
		t.Fatalf("empty settings: %v", err)
	}
	as, err := p.BuildAnalyzers()
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Name != wallclock.Analyzer.Name {
		t.Errorf("BuildAnalyzers() = %v, want [wallclock]", as)
	}
	if f := as[0].Flags.Lookup("ambiguous"); f == nil || f.Value.String() != "true" {
		t.Errorf("ambiguous by default = %v, want true", f)
	}
	if got := p.GetLoadMode(); got != register.LoadModeTypesInfo {
		t.Errorf("GetLoadMode() = %q, want %q", got, register.LoadModeTypesInfo)
	}
}

// TestAmbiguousSetting turns the lower-severity category off from .golangci.yml.
func TestAmbiguousSetting(t *testing.T) {
	t.Parallel()
	p, err := golangci.New(map[string]any{"ambiguous": false})
	if err != nil {
		t.Fatal(err)
	}
	as, err := p.BuildAnalyzers()
	if err != nil {
		t.Fatal(err)
	}
	if f := as[0].Flags.Lookup("ambiguous"); f == nil || f.Value.String() != "false" {
		t.Errorf("ambiguous: false gave %v", f)
	}
}

func TestUnknownSetting(t *testing.T) {
	t.Parallel()
	_, err := golangci.New(map[string]any{"strict": true})
	if err == nil || !strings.Contains(err.Error(), `unknown field "strict"`) {
		t.Errorf("New(strict) error = %v, want unknown field \"strict\"", err)
	}
}
