//go:build linux

package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
)

func addVersionCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("version", "Print the version and build information.")
	return subcommand{clause: cmd, run: func(context.Context) int {
		fmt.Fprintln(c.stdout, version.Print("clockwatch"))
		return 0
	}}
}
