//go:build linux

package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// configFlag declares --config.file on a command that reads the
// configuration.
func (c *cli) configFlag(cmd *kingpin.CmdClause) {
	cmd.Flag("config.file", "YAML configuration file; by default "+DefaultConfigFile+" when it exists, else the built-in defaults (--config.file= for those).").
		PlaceHolder("FILE").IsSetByUser(&c.configFileSet).StringVar(&c.configFile)
}

// logFlags declares --log.level and --log.format on a command that logs.
func (c *cli) logFlags(cmd *kingpin.CmdClause) {
	cmd.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").
		Default("info").EnumVar(&c.logLevel, "debug", "info", "warn", "error")
	cmd.Flag("log.format", "Output format of log messages: logfmt or json.").
		Default("logfmt").EnumVar(&c.logFormat, "logfmt", "json")
}

// chronyAddressFlag declares --chrony.address on a command that reads
// chronyd: the daemon, and status, which reads the chronyd the daemon does.
func (c *cli) chronyAddressFlag(cmd *kingpin.CmdClause) {
	cmd.Flag("chrony.address", `chronyd's command socket (an absolute path), host:port of its UDP command port, or "auto". Overrides chrony.address of the configuration file; default: as the file says.`).
		PlaceHolder("ADDRESS").StringVar(&c.chronyAddress)
}

// explainParseError says what a refused command line needs: for a flag that
// another command takes, which command that is; for a command after flags,
// that the flags before it are the daemon's (run is the default command).
func explainParseError(app *kingpin.Application, args []string, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown long flag '--"); ok {
		name = strings.TrimSuffix(name, "'")
		cmd := selectedCommand(app, args)
		var takers []string
		for _, c := range app.Model().Commands {
			for _, f := range c.Flags {
				if f.Name == name || "no-"+f.Name == name {
					takers = append(takers, c.Name)
				}
			}
		}
		if len(takers) > 0 {
			return fmt.Sprintf("%s: --%s is not a flag of %s (it is one of clockwatch %s); see clockwatch %s --help", msg, name, cmd, strings.Join(takers, ", clockwatch "), cmd)
		}
		return fmt.Sprintf("%s; see clockwatch %s --help", msg, cmd)
	}
	if word, ok := strings.CutPrefix(msg, "unexpected "); ok {
		for _, c := range app.Model().Commands {
			if c.Name == word {
				return fmt.Sprintf("%s: flags before a command are the daemon's (run, the default command); give them after it: clockwatch %s [<flags>]", msg, word)
			}
		}
	}
	return msg + " (try --help)"
}

// selectedCommand names the command args select: the first that names one,
// else the default, run.
func selectedCommand(app *kingpin.Application, args []string) string {
	for _, a := range args {
		for _, c := range app.Model().Commands {
			if a == c.Name {
				return c.Name
			}
		}
	}
	return "run"
}
