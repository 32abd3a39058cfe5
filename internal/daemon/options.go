package daemon

import (
	"fmt"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/procs"
	"github.com/clockwatch/clockwatch/internal/sdnotify"
)

// Options are the process settings the command line gives.
type Options struct {
	// ConfigFile is the YAML file to load and reload on SIGHUP; empty for
	// the defaults.
	ConfigFile string
	// Web is the exporter-toolkit listener configuration (addresses, TLS
	// and basic auth file, systemd socket).
	Web *web.FlagConfig
	// MetricsPath is where metrics are served, usually /metrics.
	MetricsPath string
	// Clocks and Timex read the host; nil means the real system readers.
	Clocks hostclock.ClockReader
	Timex  hostclock.TimexReader
	// Notifier tells systemd about start-up, reloads, shutdown and the
	// status line; nil does nothing.
	Notifier *sdnotify.Notifier
	// WatchdogInterval is systemd's watchdog timeout
	// (sdnotify.WatchdogInterval); zero turns the watchdog off.
	WatchdogInterval time.Duration
	// MaxHTTPConns caps the HTTP connections; zero is 256.
	MaxHTTPConns int
	// Collectors are the --[no-]collector.<name> switches, applied over
	// the file at every reload too (New's configuration has them already).
	Collectors Collectors
	// Kubernetes is the Node condition and Events transport
	// (--kubernetes.*); off without a node name.
	Kubernetes kubeclient.Options
	// Env is the process's environment as systemd sets it
	// (STATE_DIRECTORY, RUNTIME_DIRECTORY, LISTEN_PID, LISTEN_FDS,
	// LISTEN_FDNAMES; DBUS_SYSTEM_BUS_ADDRESS) and its pid: the daemon never
	// reads the environment itself. A nil Getenv is an empty environment, a
	// zero PID os.Getpid().
	Env host.Env
	// ChronyAddress is --chrony.address: chrony.address over the file's,
	// at every reload too, as chrony_exporter has it; "" leaves the file's.
	ChronyAddress string
	// Procs raises the Go processors while floods compete with the
	// announcements (--runtime.busy-gomaxprocs); nil never changes them.
	Procs *procs.Procs
}

// ApplyFlags applies the command line's settings over a configuration
// loaded from the file: the collector switches, then --chrony.address. The
// flag wins over the file, at the start and at every reload.
func (o Options) ApplyFlags(cfg *config.Config) (*config.Config, error) {
	cfg, err := o.Collectors.Apply(cfg)
	if err != nil || o.ChronyAddress == "" {
		return cfg, err
	}
	out := *cfg
	out.Chrony.Address = o.ChronyAddress
	if err := out.Chrony.Validate(); err != nil {
		return nil, fmt.Errorf("--chrony.address=%s: %w", o.ChronyAddress, err)
	}
	return &out, nil
}
