//go:build linux

package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/cmd/clockwatch/internal/subscriber"
)

func addWatchCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("watch", "Print the stepdown socket's events as they come. Exit codes: 0 when interrupted, 3 on stepdown (--exit-on-stepdown), 4 when the daemon is unreachable (--exit-on-unknown).")
	var o subscriber.WatchOptions
	cmd.Flag("socket", "Path of clockwatch's stepdown socket; by default where the daemon opens it (stepdown.socket, under RUNTIME_DIRECTORY when that is set).").PlaceHolder("PATH").StringVar(&o.Path)
	cmd.Flag("json", "Print each message as its JSON line.").BoolVar(&o.JSON)
	cmd.Flag("heartbeats", "Print heartbeats too.").BoolVar(&o.Heartbeats)
	cmd.Flag("exit-on-stepdown", "Exit with code 3 as soon as the state is stepdown.").BoolVar(&o.ExitOnStepdown)
	cmd.Flag("no-ack", "Do not acknowledge stepdowns (by default watch acks each, so it is not counted as a lock holder failing to release).").BoolVar(&o.NoAck)
	cmd.Flag("exit-on-unknown", "Exit with code 4 when the daemon cannot be reached or stops answering.").BoolVar(&o.ExitOnUnknown)
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		path, err := c.stepdownSocket(o.Path)
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch watch: %v\n", err)
			return 2
		}
		o.Path = path
		o.Explain = func(err error) string { return explainSocket(path, err) }
		return subscriber.Watch(ctx, c.stdout, o)
	}}
}
