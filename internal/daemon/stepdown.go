package daemon

import (
	"fmt"
	"log/slog"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
	"github.com/clockwatch/clockwatch/stepdown"
)

// NewStepdownSocket returns the stepdown socket, a transport of ann, with
// the socket open, so that a socket that cannot be opened fails the start
// with a message that says why. cfg is resolved already (Config.Resolve);
// env gives the environment and pid of socket activation; peers serves
// watch_peer (nil: refused). The heartbeat beats on pl, the daemon's pulse,
// which the caller runs: one timer for all periodic work. busy is told of
// floods (procs.Procs.Busy; nil: nobody).
func NewStepdownSocket(cfg socket.Config, ann *announce.Announcer, pl *pulse.Pulse, env host.Env, logger *slog.Logger, peers socket.PeerWatcher, busy func(why string)) (*socket.Server, error) {
	if pl == nil {
		return nil, fmt.Errorf("stepdown socket: no pulse: the daemon's pulse times the heartbeat")
	}
	srv, err := socket.New(cfg, ann, socket.Options{Logger: logger, Getenv: env.Getenv, PID: env.PID, Peers: peers, Pulse: pl, Busy: busy})
	if err != nil {
		return nil, fmt.Errorf("stepdown socket: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return nil, fmt.Errorf("%w; set stepdown.socket to a writable path (or RUNTIME_DIRECTORY), or stepdown.enabled: false", err)
	}
	return srv, nil
}

// localClock is what this node tells its peers of its own clock: the
// announcer's state and epoch, and the smallest error bound of an
// authoritative source with a time solution (none: unknown). Called for
// each reply; the sources and the announcer are set before any task runs.
func (d *Daemon) localClock() peers.State {
	st := peers.State{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting}
	if d.announcer != nil {
		snap := d.announcer.Latest()
		st.State, st.Epoch = snap.State, snap.Epoch
		if snap.State != stepdown.StateOK {
			st.Reason = snap.Reason
		} else {
			st.Reason = ""
		}
	}
	for _, r := range d.sources.BoundingReadings() {
		if timesources.Answers(r) && (!st.HasErrorBound || r.ErrorBound < st.ErrorBound) {
			st.ErrorBound, st.HasErrorBound = r.ErrorBound, true
		}
	}
	return st
}
