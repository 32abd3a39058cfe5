//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/clockwatch/clockwatch/internal/journal"
)

func addEventsCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("events", "Print the clock events recorded in the journal (steps, leap seconds, resumes).")
	since := cmd.Flag("since", "Only events at or after this time: a duration back from now (24h) or an RFC 3339 time.").PlaceHolder("WHEN").String()
	asJSON := cmd.Flag("json", "Print JSON lines, as stored in the journal.").Bool()
	dir := cmd.Flag("journal.dir", "State directory holding the journal; by default the configured journal.dir.").PlaceHolder("DIR").String()
	return subcommand{clause: cmd, run: func(context.Context) int {
		cfg, err := c.config()
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: %v\n", err)
			return 2
		}
		jcfg := cfg.Journal
		if *dir != "" {
			jcfg.Dir = *dir
		}
		from, err := parseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: events: --since: %v\n", err)
			return 2
		}
		if st, err := os.Stat(jcfg.Dir); err != nil || !st.IsDir() {
			// Not "no events": the journal is elsewhere, or clockwatch
			// never ran with this state directory.
			fmt.Fprintf(c.stderr, "clockwatch: events: the journal directory %s does not exist or is not a directory (%v); give the daemon's state directory with --journal.dir, or set journal.dir or STATE_DIRECTORY as the daemon has them\n", jcfg.Dir, errOrNotDir(err))
			return 1
		}
		all, warnings, err := journal.Read(jcfg.Dir, time.Time{})
		journal.PrintWarnings(c.stderr, warnings)
		if errors.Is(err, fs.ErrPermission) {
			// Not the file the error names (with the directory closed
			// to us, even one that does not exist): the directory.
			fmt.Fprintf(c.stderr, "clockwatch: events: permission denied reading the journal under %s: %s\n", jcfg.Dir, joinHint(jcfg.Dir))
			return 1
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: events: %v\n", err)
			return 1
		}
		recs := all
		if !from.IsZero() {
			//clockwatch:wallclock-ok --since is a wall time the user asks about, compared with the wall times the journal recorded
			recs = slices.DeleteFunc(slices.Clone(all), func(r journal.Record) bool { return r.Event.WallAfter.Before(from) })
		}
		if len(recs) == 0 && !*asJSON {
			if older := len(all) - len(recs); older > 0 {
				fmt.Fprintf(c.stderr, "No clock events %s (%d older) in the journal under %s.\n", sinceText(*since), older, jcfg.Dir)
			} else {
				fmt.Fprintf(c.stderr, "No clock events in the journal under %s.\n", jcfg.Dir)
			}
		}
		if err := journal.Print(c.stdout, recs, *asJSON); err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: events: %v\n", err)
			return 1
		}
		return 0
	}}
}

// sinceText says what --since selected: "in the last 1m" or "since TIME".
func sinceText(since string) string {
	since = strings.TrimSpace(since)
	if _, err := time.ParseDuration(since); err == nil {
		return "in the last " + since
	}
	return "since " + since
}

func errOrNotDir(err error) error {
	if err != nil {
		return err
	}
	return errors.New("not a directory")
}

// parseSince reads --since: empty (everything), a duration back from now,
// or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("duration must not be negative, got %s", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want a duration such as 24h or an RFC 3339 time such as 2026-11-30T03:12:00Z, got %q", s)
	}
	return t, nil
}
