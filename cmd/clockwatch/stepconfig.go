package main

import (
	"os"

	"github.com/clockwatch/clockwatch/config"
	"github.com/clockwatch/clockwatch/journal"
	"github.com/clockwatch/clockwatch/step"
)

// stepConfig is the step detector's configuration from --config.file.
func stepConfig(c *cli) (step.Config, error) {
	cfg, err := config.Load(c.configFile)
	if err != nil {
		return step.Config{}, err
	}
	return cfg.Step, nil
}

// journalConfig is the journal's configuration from --config.file, with the
// state directory resolved as the daemon resolves it.
func journalConfig(c *cli) (journal.Config, error) {
	cfg, err := config.Load(c.configFile)
	if err != nil {
		return journal.Config{}, err
	}
	return cfg.Journal.Resolve(os.Getenv), nil
}
