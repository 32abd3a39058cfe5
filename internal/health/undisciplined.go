package health

import (
	"fmt"
	"strings"

	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/policy"
)

// NobodyDisciplines reports whether nobody keeps this clock: no time daemon
// answered (daemonAnswered false: chronyd and ntpd absent, failed or turned
// off) and the kernel does not call the clock synchronised. A VM or
// container without a time daemon is such a host.
func NobodyDisciplines(daemonAnswered bool, k *kernel.Timex) bool {
	return !daemonAnswered && k != nil && !kernelSynchronised(k)
}

// kernelSynchronised is how a host without a time daemon is judged
// synchronised: by the kernel's maximum error, which grows by 500 ppm while
// nothing disciplines the clock and stops at 16 s, and not by STA_UNSYNC
// alone (chronyd clears that flag only with rtcsync). It follows the rule
// the unsynchronized trigger applies to the kernel source.
func kernelSynchronised(k *kernel.Timex) bool {
	return k.MaxError < kernel.MaxErrorSaturated
}

// UndisciplinedWarning is the one line the daemon logs at start, and
// `clockwatch status` prints, on a host nobody disciplines: which triggers
// will hold the stepdown socket in stepdown for good and the configuration
// keys that turn them off. It is "" when none would (the socket, given by
// socket, or those triggers are off).
func UndisciplinedWarning(socket bool, t policy.Triggers) string {
	if !socket {
		return ""
	}
	var triggers, keys []string
	if t.ErrorBound.Enabled {
		triggers = append(triggers, fmt.Sprintf("error_bound (the kernel's maximum error is over %s)", t.ErrorBound.Threshold))
		keys = append(keys, "stepdown.triggers.error_bound.enabled: false")
	}
	if t.Unsynchronized.Enabled {
		triggers = append(triggers, fmt.Sprintf("unsynchronized (source kernel, after %s)", t.Unsynchronized.Grace))
		keys = append(keys, "stepdown.triggers.unsynchronized.enabled: false")
	}
	if len(triggers) == 0 {
		return ""
	}
	noun := "trigger "
	if len(triggers) > 1 {
		noun = "triggers "
	}
	return "no time daemon answers and the kernel says the clock is unsynchronised: nobody disciplines this clock, " +
		"so the stepdown socket stays in stepdown for good (" + noun + strings.Join(triggers, " and ") + "). " +
		"That is the safe default. If this host has no time daemon on purpose, set " + strings.Join(keys, " and ") +
		" (or stepdown.enabled: false); otherwise start chronyd or ntpd. See \"Hosts without a time daemon\" in docs/install.md."
}
