//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/cmd/clockwatch/internal/subscriber"
	"github.com/clockwatch/clockwatch/stepdown"
)

func addDrillCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("drill", "Ask the running clockwatch to send every subscriber a stepdown marked as a drill, then a resume. Root, clockwatch's user and stepdown.drill_uids only.")
	var o subscriber.DrillOptions
	var reason string
	cmd.Flag("socket", "Path of clockwatch's stepdown socket; by default where the daemon opens it (stepdown.socket, under RUNTIME_DIRECTORY when that is set).").PlaceHolder("PATH").StringVar(&o.Path)
	cmd.Flag("reason", "Reason the drill's stepdown carries.").Default("drill").
		EnumVar(&reason, reasonNames(stepdown.DrillReasons())...)
	cmd.Flag("step", "Simulated step to announce, e.g. --step=-12.4s.").DurationVar(&o.Step)
	cmd.Flag("hold", "How long the drill holds the stepdown state before the resume.").Default("5s").DurationVar(&o.Hold)
	cmd.Flag("json", "Print the drill's events as JSON lines.").BoolVar(&o.JSON)
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		path, err := c.stepdownSocket(o.Path)
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch drill: %v\n", err)
			return 2
		}
		o.Path, o.Reason = path, stepdown.Reason(reason)
		if err := subscriber.Drill(ctx, c.stdout, o); err != nil {
			if errors.Is(err, subscriber.ErrDial) {
				// No daemon, or the socket's group: say which, plainly.
				err = errors.New(explainSocket(o.Path, err))
			}
			fmt.Fprintf(c.stderr, "clockwatch drill: %v\n", err)
			return 1
		}
		return 0
	}}
}

func reasonNames(rs []stepdown.Reason) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = string(r)
	}
	return names
}

// negativeValueFlags take values that may start with a minus sign.
var negativeValueFlags = []string{"--step"}

// joinNegativeValues rewrites "--step -12.4s" as "--step=-12.4s": kingpin
// would read "-12.4s" as short flags. It returns a new slice.
func joinNegativeValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if i+1 < len(args) && len(args[i+1]) > 1 && args[i+1][0] == '-' && (args[i+1][1] >= '0' && args[i+1][1] <= '9' || args[i+1][1] == '.') {
			for _, f := range negativeValueFlags {
				if a == f {
					a = f + "=" + args[i+1]
					i++
					break
				}
			}
		}
		out = append(out, a)
	}
	return out
}
