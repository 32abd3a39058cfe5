package daemon

import (
	"fmt"
	"sort"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// Collector is an optional collector a --[no-]collector.<Name> switch
// turns on or off over the configuration file, as exporters do.
type Collector struct {
	// Name is the flag's suffix, the configuration section it overrides.
	Name string
	// Help says what the switch does, for --help.
	Help string
	// set turns the collector on or off in cfg, or says why it cannot be
	// turned on.
	set func(cfg timesources.Sectioned, on bool) error
}

// OptionalCollectors lists the collectors with a switch: the time sources
// registered with one (timesources.Registration.Switch).
func OptionalCollectors() []Collector {
	var cs []Collector
	for _, reg := range timesources.Registry() {
		if reg.Switch != nil {
			cs = append(cs, Collector{Name: reg.Name, Help: reg.Switch.Help, set: reg.Switch.Set})
		}
	}
	return cs
}

// Collectors are the switches given on the command line: collector name
// to on (true) or off. A collector not in the map follows the file.
type Collectors map[string]bool

// Apply returns cfg with the switches applied; cfg itself is not changed.
// The daemon applies them at start and at every reload, so a switch wins
// over the file for the life of the process.
func (c Collectors) Apply(cfg *config.Config) (*config.Config, error) {
	if len(c) == 0 {
		return cfg, nil
	}
	out := *cfg
	out.NTPProbes.Servers = append([]string(nil), cfg.NTPProbes.Servers...)
	known := map[string]Collector{}
	for _, k := range OptionalCollectors() {
		known[k.Name] = k
	}
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("no optional collector %q", n)
		}
		if err := k.set(&out, c[n]); err != nil {
			return nil, err
		}
	}
	return &out, nil
}
