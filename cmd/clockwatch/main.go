// Command clockwatch watches the health of this machine's clocks: it samples
// the kernel clocks, detects steps, reads the time daemons, exports it all to
// Prometheus and tells local lock holders when their clock cannot be trusted.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
)

func main() {
	if version.Version == "" {
		version.Version = "dev" // a plain `go build` or `go run`; release builds stamp it
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// cli is what every subcommand shares: its output streams and the global flags.
type cli struct {
	stdout, stderr io.Writer
	configFile     string
	logLevel       string
	logFormat      string
}

// subcommand is one verb of the binary. run returns the process exit code.
type subcommand struct {
	clause *kingpin.CmdClause
	run    func(ctx context.Context) int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr}
	app := kingpin.New("clockwatch", "Watches this machine's clocks, exports their health to Prometheus and tells lock holders when the clock cannot be trusted.")
	app.UsageWriter(stderr)
	app.ErrorWriter(stderr)
	app.Terminate(nil)
	app.HelpFlag.Short('h')
	app.Flag("config.file", "YAML configuration file; without one clockwatch runs with its defaults.").
		PlaceHolder("FILE").StringVar(&c.configFile)
	app.Flag("log.level", "Only log messages with the given severity or above: debug, info, warn, error.").
		Default("info").EnumVar(&c.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Output format of log messages: logfmt or json.").
		Default("logfmt").EnumVar(&c.logFormat, "logfmt", "json")

	subs := []subcommand{
		addDaemonCommand(app, c),
		addStatusCommand(app, c),
		addVersionCommand(app, c),
		addEventsCommand(app, c),
		addRecordCommand(app, c),
		addReplayCommand(app, c),
		addWatchCommand(app, c),
		addDrillCommand(app, c),
	}

	selected, err := app.Parse(joinNegativeValues(args))
	if err != nil {
		fmt.Fprintf(stderr, "clockwatch: %v (try --help)\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, s := range subs {
		if s.clause.FullCommand() == selected {
			return s.run(ctx)
		}
	}
	fmt.Fprintf(stderr, "clockwatch: no command %q\n", selected)
	return 2
}
