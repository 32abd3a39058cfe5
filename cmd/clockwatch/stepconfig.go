package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/journal"
	"github.com/clockwatch/clockwatch/step"
)

// stepSections is the part of the YAML configuration that the step
// commands read.
//
// TODO(lead): replace with the config package once it lands; this decodes
// only the step: and journal: sections, leniently, so that events, record
// and replay honour a config file today.
type stepSections struct {
	Clock struct {
		SampleInterval time.Duration `yaml:"sample_interval"`
	} `yaml:"clock"`
	Step    step.Config    `yaml:"step"`
	Journal journal.Config `yaml:"journal"`
}

func loadStepSections(c *cli) (stepSections, error) {
	s := stepSections{Step: step.DefaultConfig(), Journal: journal.DefaultConfig()}
	if c.configFile == "" {
		return s, nil
	}
	b, err := os.ReadFile(c.configFile)
	if err != nil {
		return s, fmt.Errorf("reading the configuration: %w", err)
	}
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil && err.Error() != "EOF" {
		return s, fmt.Errorf("parsing %s: %w", c.configFile, err)
	}
	if s.Clock.SampleInterval != 0 {
		s.Step.Interval = s.Clock.SampleInterval
	}
	if err := s.Step.Validate(); err != nil {
		return s, fmt.Errorf("%s: %w", c.configFile, err)
	}
	if err := s.Journal.Validate(); err != nil {
		return s, fmt.Errorf("%s: %w", c.configFile, err)
	}
	return s, nil
}

func stepConfig(c *cli) (step.Config, error) {
	s, err := loadStepSections(c)
	return s.Step, err
}

func journalConfig(c *cli) (journal.Config, error) {
	s, err := loadStepSections(c)
	return s.Journal, err
}
