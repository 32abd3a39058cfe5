package main

import (
	"context"

	"github.com/alecthomas/kingpin/v2"
)

func addDaemonCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("run", "Run the daemon (the default).").Default()
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		<-ctx.Done()
		return 0
	}}
}
