package replay

import (
	"fmt"
	"io"
	"time"
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
