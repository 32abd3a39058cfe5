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

// Settings are the plugin's settings in .golangci.yml; there are none yet, and
// an unknown one is an error rather than silently ignored.
type Settings struct{}

// Plugin is the golangci-lint module plugin.
type Plugin struct{}

var _ register.LinterPlugin = Plugin{}

// New is the constructor golangci-lint calls with the linter's settings.
func New(settings any) (register.LinterPlugin, error) {
	if _, err := register.DecodeSettings[Settings](settings); err != nil {
		return nil, fmt.Errorf("clockwatch linter settings: %w", err)
	}
	return Plugin{}, nil
}

// BuildAnalyzers returns the wallclock analyzer.
func (Plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{wallclock.Analyzer}, nil
}

// GetLoadMode asks for type information: the analyzer follows types.
func (Plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
