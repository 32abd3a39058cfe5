package daemon

import (
	"fmt"
	"log/slog"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/lane"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
)

// NewStepdownSocket returns the stepdown socket, a transport of ann, with
// the socket open, so that a socket that cannot be opened fails the start
// with a message that says why. cfg is resolved already (Config.Resolve);
// env gives the environment and pid of socket activation; ln is the
// daemon's lane, on which the socket's accepts and unprivileged admissions
// take turns with HTTP.
func NewStepdownSocket(cfg server.Config, ann *announce.Announcer, env host.Env, ln *lane.Lane, logger *slog.Logger) (*server.Server, error) {
	srv, err := server.New(cfg, ann, server.Options{Logger: logger, Getenv: env.Getenv, PID: env.PID, Lane: ln, LaneClass: laneStepdown})
	if err != nil {
		return nil, fmt.Errorf("stepdown socket: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return nil, fmt.Errorf("%w; set stepdown.socket to a writable path (or RUNTIME_DIRECTORY), or stepdown.enabled: false", err)
	}
	return srv, nil
}
