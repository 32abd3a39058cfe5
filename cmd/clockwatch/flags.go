//go:build linux

package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// sharedFlags declares the flags every command shares, on the application:
// kingpin then takes them on either side of the command, as git, kubectl,
// amtool and promtool take their global flags (clockwatch --config.file=F
// status). --config.file is read by every command that reads the
// configuration; --log.* by those that log (the daemon).
func (c *cli) sharedFlags(app *kingpin.Application) {
	app.Flag("config.file", "YAML configuration file; by default "+DefaultConfigFile+" when it exists, else the built-in defaults (--config.file= for those).").
		PlaceHolder("FILE").IsSetByUser(&c.configFileSet).StringVar(&c.configFile)
	app.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").
		Default("info").EnumVar(&c.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages: logfmt or json.").
		Default("logfmt").EnumVar(&c.logFormat, "logfmt", "json")
}

// chronyAddressFlag declares --chrony.address on a command that reads
// chronyd: the daemon, and status, which reads the chronyd the daemon does.
func (c *cli) chronyAddressFlag(cmd *kingpin.CmdClause) {
	cmd.Flag("chrony.address", `chronyd's command socket (an absolute path), host:port of its UDP command port, or "auto". Overrides chrony.address of the configuration file; default: as the file says.`).
		PlaceHolder("ADDRESS").StringVar(&c.chronyAddress)
}

// explainParseError says what a refused command line needs: for a flag that
// another command takes, which command that is; for a command after flags
// of the daemon's (run is the default command, so flags before any command
// are its), which of them the command does not take.
func explainParseError(app *kingpin.Application, args []string, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown long flag '--"); ok {
		name = strings.TrimSuffix(name, "'")
		cmd := selectedCommand(app, args)
		if takers := flagTakers(app, name); len(takers) > 0 {
			return fmt.Sprintf("%s: --%s is not a flag of %s (it is one of clockwatch %s); see clockwatch %s --help", msg, name, cmd, strings.Join(takers, ", clockwatch "), cmd)
		}
		return fmt.Sprintf("%s; see clockwatch %s --help", msg, cmd)
	}
	if word, ok := strings.CutPrefix(msg, "unexpected "); ok && isCommand(app, word) {
		before := args
		if i := slices.Index(args, word); i >= 0 {
			before = args[:i]
		}
		var notIts, its, given []string
		for _, a := range before {
			name, isFlag := strings.CutPrefix(a, "--")
			name, _, _ = strings.Cut(name, "=")
			switch {
			case !isFlag || isShared(app, name):
			case slices.Contains(flagTakers(app, name), word):
				its, given = append(its, "--"+name), append(given, a)
			default:
				notIts = append(notIts, "--"+name)
			}
		}
		why := fmt.Sprintf("flags before a command are the daemon's (run, the default command), but for %s, which every command takes on either side", sharedFlagNames(app))
		if len(notIts) > 0 {
			return fmt.Sprintf("%s: %s: %s; see clockwatch %s --help", msg, notFlagsOf(notIts, word), why, word)
		}
		return fmt.Sprintf("%s: %s; give %s after it: clockwatch %s %s", msg, why, strings.Join(its, ", "), word, strings.Join(given, " "))
	}
	return msg + " (try --help)"
}

// flagTakers names the commands that declare the flag name (or name is its
// --no- form).
func flagTakers(app *kingpin.Application, name string) []string {
	var takers []string
	for _, c := range app.Model().Commands {
		for _, f := range c.Flags {
			if f.Name == name || "no-"+f.Name == name {
				takers = append(takers, c.Name)
			}
		}
	}
	return takers
}

// sharedFlagNames lists the flags every command takes (the application's),
// but --help and --version.
func sharedFlagNames(app *kingpin.Application) string {
	var names []string
	for _, f := range app.Model().Flags {
		if !f.Hidden && f.Name != "help" && f.Name != "version" {
			names = append(names, "--"+f.Name)
		}
	}
	return strings.Join(names, ", ")
}

// isShared says whether name (or its --no- form) is a flag of the
// application, which every command takes.
func isShared(app *kingpin.Application, name string) bool {
	for _, f := range app.Model().Flags {
		if f.Name == name || "no-"+f.Name == name {
			return true
		}
	}
	return false
}

// isCommand says whether word names a command.
func isCommand(app *kingpin.Application, word string) bool {
	for _, c := range app.Model().Commands {
		if c.Name == word {
			return true
		}
	}
	return false
}

// notFlagsOf says that flags are not flags of cmd but of the daemon's.
func notFlagsOf(flags []string, cmd string) string {
	if len(flags) == 1 {
		return fmt.Sprintf("%s is not a flag of %s but of clockwatch run", flags[0], cmd)
	}
	return fmt.Sprintf("%s are not flags of %s but of clockwatch run", strings.Join(flags, ", "), cmd)
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
