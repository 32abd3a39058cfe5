//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/daemon"
)

// DefaultConfigFile is where the packages install the configuration: every
// subcommand reads it when --config.file is not given and it exists, so that
// plain `clockwatch status` or `clockwatch watch` on a packaged host sees
// what the daemon (started with this path by its unit) sees.
const DefaultConfigFile = "/etc/clockwatch/clockwatch.yml"

// configPath is the configuration file the command line selects: the
// --config.file given (an empty one: none), else the default file when it
// exists, else none ("").
func (c *cli) configPath() string {
	if c.configFileSet || c.configFile != "" {
		return c.configFile
	}
	if c.defaultConfigFile == "" {
		return ""
	}
	if _, err := os.Stat(c.defaultConfigFile); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return c.defaultConfigFile // a default that exists but cannot be read is an error Load reports
}

// config loads the configuration and resolves its paths as the daemon
// does: the journal under STATE_DIRECTORY and the stepdown socket under
// RUNTIME_DIRECTORY when those are set and the configuration leaves the
// defaults, or, for a user other than root, under the user's own
// directories when the system's are not there for them (userdirs.go).
func (c *cli) config() (*config.Config, error) {
	cfg, err := config.Load(c.configPath())
	if err != nil {
		return nil, err
	}
	// status reads chronyd where the daemon does.
	if cfg, err = (daemon.Options{ChronyAddress: c.chronyAddress}).ApplyFlags(cfg); err != nil {
		return nil, err
	}
	// A user's own daemon may have used the user's own directories.
	env := clientDirs(c.getenv, c.uid, cfg.Stepdown.Socket, cfg.Journal.Dir)
	cfg.Journal = cfg.Journal.Resolve(env)
	cfg.Stepdown.Config = cfg.Stepdown.Resolve(env)
	return cfg, nil
}

// stepdownSocket is the socket watch and drill dial: the --socket given, else
// the one the daemon opens with this configuration and environment.
func (c *cli) stepdownSocket(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	cfg, err := c.config()
	if err != nil {
		return "", err
	}
	return cfg.Stepdown.Socket, nil
}
