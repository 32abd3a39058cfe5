package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/config"
	"github.com/clockwatch/clockwatch/health"
	"github.com/clockwatch/clockwatch/probe"
)

func addStatusCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("status", "Print a one-screen verdict of this node's clock health and exit 0 (OK), 1 (WARNING), 2 (CRITICAL) or 3 (UNKNOWN).")
	return subcommand{clause: cmd, run: func(context.Context) int {
		cfg, err := config.Load(c.configFile)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return int(health.Unknown)
		}
		f := gatherFacts(probe.SysClocks{}, probe.SysTimex{})
		v := health.Judge(f, cfg.Health)
		if err := health.Write(c.stdout, f, v); err != nil {
			fmt.Fprintln(c.stderr, err)
			return int(health.Unknown)
		}
		return int(v.Level)
	}}
}

// gatherFacts reads every probe once.
func gatherFacts(clocks probe.ClockReader, timex probe.TimexReader) health.Facts {
	var f health.Facts
	var s probe.Sample
	if err := clocks.ReadClocks(&s); err != nil {
		f.ClocksErr = err
	} else {
		f.Clocks = &s
	}
	if raw, err := timex.ReadTimex(); err != nil {
		f.KernelErr = err
	} else {
		tx := probe.Decode(raw)
		f.Kernel = &tx
	}
	return f
}
