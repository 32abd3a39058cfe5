package floodtest

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// BaselineP99 is the largest p99 of the baseline phases' delivery: what the
// floods' figures are judged against.
func BaselineP99(rs []Result) time.Duration {
	var b time.Duration
	for _, r := range rs {
		if len(r.Phase.Floods) == 0 {
			b = max(b, r.Delivery.P99)
		}
	}
	return b
}

// Table writes the results as a Markdown table: for each phase, the good
// subscriber's delivery against the baseline, the event's own part, a new
// root client's hello and what the floods did.
func Table(w io.Writer, rs []Result) {
	base := BaselineP99(rs)
	fmt.Fprintln(w, "| phase | drill → good subscriber p50 / p90 / p99 / max | p99 ÷ baseline p99 | event (mono_ns) → read p50 / p99 / max | new root client's hello p50 / max (connect errors): reserved socket; public socket | floods (per second) | daemon CPU | load |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		ratio := "—"
		if base > 0 {
			ratio = fmt.Sprintf("%.2f", float64(r.Delivery.P99)/float64(base))
		}
		var fl []string
		for _, f := range r.Floods {
			rate := float64(f.Ops) / f.For.Seconds()
			switch f.Kind {
			case KindIdle:
				fl = append(fl, fmt.Sprintf("%d idle (uid %d)", f.Ops, f.UID))
			default:
				fl = append(fl, fmt.Sprintf("%s %.0f/s (%d errors)", f.Kind, rate, f.Errs))
			}
		}
		missed := ""
		if r.Missed > 0 {
			missed = fmt.Sprintf(", **%d missed**", r.Missed)
		}
		fmt.Fprintf(w, "| %s | %s / %s / %s / %s%s | %s | %s / %s / %s | %s / %s (%d); %s / %s (%d) | %s | %.0f %% | %.2f |\n", r.Phase.Name,
			ms(r.Delivery.P50), ms(r.Delivery.P90), ms(r.Delivery.P99), ms(r.Delivery.Max), missed, ratio,
			ms(r.Event.P50), ms(r.Event.P99), ms(r.Event.Max),
			ms(r.Hello.P50), ms(r.Hello.Max), r.DialErrors, ms(r.PublicHello.P50), ms(r.PublicHello.Max), r.PublicDialErrors,
			strings.Join(fl, ", "), 100*r.DaemonCPU, r.Load)
	}
}
