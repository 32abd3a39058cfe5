package golangci

import (
	"fmt"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/clockwatch/clockwatch/cmd/clockwatch-vet/wallclock"
)

// Name is the linter's name in .golangci.yml.
const Name = "clockwatch"

func init() { register.Plugin(Name, New) }

// Settings are the plugin's settings in .golangci.yml; an unknown one is an
// error rather than silently ignored.
type Settings struct {
	// Ambiguous reports the lower-severity category too (default true).
	Ambiguous *bool `json:"ambiguous"`
}

// Plugin is the golangci-lint module plugin.
type Plugin struct {
	cfg wallclock.Config
}

var _ register.LinterPlugin = Plugin{}

// New is the constructor golangci-lint calls with the linter's settings.
func New(settings any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](settings)
	if err != nil {
		return nil, fmt.Errorf("clockwatch linter settings: %w", err)
	}
	cfg := wallclock.Config{Ambiguous: true}
	if s.Ambiguous != nil {
		cfg.Ambiguous = *s.Ambiguous
	}
	return Plugin{cfg: cfg}, nil
}

// BuildAnalyzers returns the wallclock analyzer with the plugin's settings.
func (p Plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{wallclock.New(p.cfg)}, nil
}

// GetLoadMode asks for type information: the analyzer follows types.
func (Plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
