package replay

import (
	"fmt"
	"io"
	"time"

	"github.com/clockwatch/clockwatch/examples/leader"
)

// Format writes results as a Markdown table.
func Format(w io.Writer, results []Result) error {
	const head = `| run | lease timer | fencing | clockwatch | both leaders for | A's writes after D won: attempted | stale writes in the table | of which overwrote D's | rejected by the fence | fault → A stops writing | fault → D leads |
|---|---|---|---|---|---|---|---|---|---|---|
`
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	for _, r := range results {
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %d | %d | %d | %s | %s |\n",
			r.Scenario.Name, r.Scenario.leaseClock(), onOff(r.Scenario.Fencing), onOff(r.Scenario.Clockwatch),
			dur(r.DoubleLeader), r.StaleAttempted, r.StaleLanded, r.Overwrote, r.Rejected,
			dur(r.EventToStop), dur(r.LeaseToD))
		if err != nil {
			return err
		}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// dur prints a duration in seconds, or milliseconds below one second.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// FormatTerms writes, for each run, when each node believed it led (relative
// to the fault, and by the node's own wall clock) and what it wrote.
func FormatTerms(w io.Writer, results []Result) error {
	for _, r := range results {
		if _, err := fmt.Fprintf(w, "%s:\n", r.Scenario.Name); err != nil {
			return err
		}
		for _, s := range []leader.Stats{r.A, r.D} {
			for _, t := range s.Terms {
				_, err := fmt.Fprintf(w, "  %s token %d led from %+.3f s to %+.3f s after the fault (its wall clock: %s to %s): %s\n",
					s.Node, t.Token, t.Start.Sub(r.Fault).Seconds(), t.End.Sub(r.Fault).Seconds(),
					t.StartWall.Format("15:04:05.000"), t.EndWall.Format("15:04:05.000"), t.EndReason)
				if err != nil {
					return err
				}
			}
			_, err := fmt.Fprintf(w, "  %s entries attempted %d, landed %d, rejected by the fence %d, failed %d\n",
				s.Node, s.Attempted, s.Landed, s.Rejected, s.Failed)
			if err != nil {
				return err
			}
		}
	}
	return nil
}
