//go:build linux

// Command clockwatch watches the health of this machine's clocks: it samples
// the kernel clocks, detects steps, reads the time daemons, exports it all to
// Prometheus and tells local lock holders when their clock cannot be trusted.
//
// It is built for Linux only: every file here carries //go:build linux, so
// that a build for another system fails on that constraint ("build
// constraints exclude all Go files") rather than on a symbol deep inside
// (adjtimex, timerfd's cancel-on-set, CLOCK_BOOTTIME and SO_PEERCRED are
// Linux's). The client module, stepdown/, builds everywhere
// (crossbuild_test.go checks both).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/clockwatch/clockwatch"
	"github.com/clockwatch/clockwatch/internal/sched"
)

func main() {
	if version.Version == "" {
		version.Version = moduleVersion(debug.ReadBuildInfo, clockwatch.Version())
	}
	if version.Branch == "" {
		version.Branch = "unknown" // only make stamps it
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// moduleVersion is the version of a binary the build did not stamp (make
// and the packages stamp scripts/version.sh's): `go install ...@v0.1.0`
// records the module's version, v0.1.0, in the binary; `go build` and `go
// run` in a checkout record none ("(devel)"): then the VERSION file's, which
// the binary embeds, marked -dev (a build of that tree, not the release).
// The revision is Go's vcs.revision where the build stamps it (-buildvcs,
// on by default in a git checkout): prometheus/common/version reads it.
//
// Go 1.24 and later record a pseudo-version where they stamp the revision:
// v0.0.0-TIME-SHA in a clone without tags says nothing the revision does
// not, and less than VERSION.
func moduleVersion(read func() (*debug.BuildInfo, bool), embedded string) string {
	if bi, ok := read(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" &&
		(embedded == "" || !strings.HasPrefix(bi.Main.Version, "v0.0.0-")) {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	if embedded == "" {
		return "dev"
	}
	return embedded + "-dev"
}

// cli is what every subcommand shares: its output streams, its environment
// and the values of the flags several commands declare (flags.go).
type cli struct {
	stdout, stderr io.Writer
	// getenv reads the environment (RUNTIME_DIRECTORY, STATE_DIRECTORY).
	getenv func(string) string
	// uid is the effective uid: a user other than root gets directories of
	// its own where it may not write the system's (userdirs.go).
	uid int
	// defaultConfigFile is read when --config.file is not given and it
	// exists (DefaultConfigFile; tests point it elsewhere).
	defaultConfigFile string

	// setMaxProcs sets GOMAXPROCS for the daemon (runtime.GOMAXPROCS); nil
	// in tests that run the daemon in their own process.
	setMaxProcs func(int) int
	// threads are the process's threads, whose nice value the daemon
	// lowers (--runtime.nice); nil in tests that run the daemon in their
	// own process.
	threads sched.Threads

	configFile    string
	configFileSet bool // --config.file was given, perhaps empty: then no file
	logLevel      string
	logFormat     string
	// manPage is set when the command line asks for the manual page
	// (--help-man): the version then goes in on one line.
	manPage bool
	// chronyAddress is --chrony.address ("": the configuration's).
	chronyAddress string
}

// subcommand is one verb of the binary. run returns the process exit code.
type subcommand struct {
	clause *kingpin.CmdClause
	run    func(ctx context.Context) int
}

// run runs the command line args with this process's environment.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv, uid: os.Geteuid(), defaultConfigFile: DefaultConfigFile, setMaxProcs: runtime.GOMAXPROCS, threads: sched.Proc{}}
	return c.run(ctx, args)
}

// exitCode is what kingpin's terminate panics with once it has printed help
// or the version, so that parsing stops there and no command runs.
type exitCode int

// app declares the command line: every command and the flags that apply to
// it.
func (c *cli) app() (*kingpin.Application, []subcommand) {
	app := kingpin.New("clockwatch", "Watches this machine's clocks, exports their health to Prometheus and tells lock holders when the clock cannot be trusted.")
	app.UsageWriter(c.stdout) // help and --version, asked for: standard output
	app.ErrorWriter(c.stderr)
	app.Terminate(func(code int) { panic(exitCode(code)) })
	app.HelpFlag.Short('h')
	// --help-man (kingpin's, hidden: the packages' manual page) puts the
	// version in the page's .TH line: one line there, not the build table.
	if c.manPage {
		app.Version(version.Version)
	} else {
		app.Version(version.Print("clockwatch"))
	}
	// Each command declares the flags that apply to it, and only those:
	// its --help lists them, and any other is an error. The few every
	// command shares are the application's: accepted before the command
	// too.
	c.sharedFlags(app)

	subs := []subcommand{
		addDaemonCommand(app, c),
		addStatusCommand(app, c),
		addVersionCommand(app, c),
		addEventsCommand(app, c),
		addRecordCommand(app, c),
		addReplayCommand(app, c),
		addWatchCommand(app, c),
		addDrillCommand(app, c),
		addHostDirsCommand(app, c),
	}
	return app, subs
}

func (c *cli) run(ctx context.Context, args []string) int {
	c.manPage = slices.Contains(args, "--help-man")
	app, subs := c.app()
	selected, code, err := parse(app, joinNegativeValues(args))
	if code >= 0 {
		return code // help or the version was printed
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "clockwatch: %v\n", explainParseError(app, args, err))
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, s := range subs {
		if s.clause.FullCommand() == selected {
			return s.run(ctx)
		}
	}
	fmt.Fprintf(c.stderr, "clockwatch: no command %q\n", selected)
	return 2
}

// parse parses args; code is the exit code when kingpin terminated
// (help, --version), -1 when a command is to run.
func parse(app *kingpin.Application, args []string) (selected string, code int, err error) {
	defer func() {
		if r := recover(); r != nil {
			ec, ok := r.(exitCode)
			if !ok {
				panic(r)
			}
			code = int(ec)
		}
	}()
	selected, err = app.Parse(args)
	return selected, -1, err
}
