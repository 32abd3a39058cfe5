package replay

import (
	"fmt"
	"io"
	"time"
)

// Format writes results as a Markdown table.
func Format(w io.Writer, results []Result) error {
	const head = `| run | fault | min-replicas | fence epoch | workers granted the lock | orders paid twice | stale holder stopped by the fence | claims refused | fault → +sdown | fault → +switch-master | fault → second lock | old master took writes for | run took |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
`
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	for _, r := range results {
		o := r.Outcomes()
		oldMaster := "–"
		if r.Scenario.Fault == Isolate {
			oldMaster = dur(r.OldMasterWrites)
			if r.OldMasterRefusal == "" {
				oldMaster += " (to the end)"
			}
		}
		epoch := string(r.Scenario.Epoch)
		if r.Scenario.AcceptEqual {
			epoch += ", equal let through"
		}
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %d of %d | %d | %d | %s | %s | %s | %s | %s |\n",
			r.Scenario.Name, r.Scenario.Fault, onOff(r.Scenario.MinReplicas), epoch,
			r.Holders(), r.Tally.PaidTwice, r.Tally.Orders, o["fenced"], o["claim refused"],
			dur(r.SDown), dur(r.Promotion), dur(r.SecondLock), oldMaster, dur(r.Took))
		if err != nil {
			return err
		}
	}
	return nil
}

// FormatLocks writes, for each run, every lock granted: to whom, by which
// master, when (from the fault), with which epoch, and what came of it.
func FormatLocks(w io.Writer, results []Result) error {
	for _, r := range results {
		_, err := fmt.Fprintf(w, "%s (fault %s after the first lock; %d payments for %d orders, %d paid twice, %.2f excess paid):\n",
			r.Scenario.Name, dur(r.LockToFault), r.Tally.Payments, r.Tally.Orders, r.Tally.PaidTwice, float64(r.Tally.ExcessCents)/100)
		if err != nil {
			return err
		}
		for _, l := range r.Locks {
			epoch := ""
			if l.Epoch != 0 {
				epoch = fmt.Sprintf(", epoch %d", l.Epoch)
			}
			late := ""
			if l.Late {
				late = " (late: after the job)"
			}
			_, err := fmt.Fprintf(w, "  %s got the lock from the master on port %s at %+.3f s%s: %s after listing %d orders and paying %d, ended at %+.3f s%s\n",
				l.Worker, l.Master, l.Since.Seconds(), epoch, l.Outcome, l.Listed, l.Paid, l.End.Sub(l.At.Add(-l.Since)).Seconds(), late)
			if err != nil {
				return err
			}
		}
		if r.Scenario.Fault == Isolate {
			refusal := r.OldMasterRefusal
			if refusal == "" {
				refusal = "never refused"
			}
			if _, err := fmt.Fprintf(w, "  the old master took a write %s after the partition, then: %s\n", dur(r.OldMasterWrites), refusal); err != nil {
				return err
			}
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
		return "–"
	case d < time.Second && d > -time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}
