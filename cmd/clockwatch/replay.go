//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/internal/trace"
)

func addReplayCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("replay", "Feed a recorded trace through the step detector and print one JSON line per event.")
	file := cmd.Arg("file", "Trace file (JSON lines, see docs/trace-format.md); - reads standard input.").Required().String()
	return subcommand{clause: cmd, run: func(context.Context) int {
		full, err := c.config()
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: %v\n", err)
			return 2
		}
		cfg := full.Step
		var r io.Reader = os.Stdin
		if *file == "" { // kingpin hands a lone "-" over as ""
			*file = "-"
		}
		if *file != "-" {
			f, err := os.Open(*file)
			if err != nil {
				fmt.Fprintf(c.stderr, "clockwatch: replay: %v\n", err)
				return 1
			}
			defer f.Close()
			r = f
		}
		n, err := trace.Replay(r, cfg, c.stdout)
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: replay %s: %v\n", *file, err)
			return 1
		}
		fmt.Fprintf(c.stderr, "clockwatch replay: %s and %s, %s\n", count(n.Samples, "sample"), count(n.Marks, "clock-set mark"), count(n.Events, "event"))
		return 0
	}}
}
