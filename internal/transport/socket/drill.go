package socket

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/stepdown"
)

// DrillRequest is what a drill asks for.
type DrillRequest struct {
	// Reason is the reason the drill's stepdown carries ("drill" if empty).
	Reason stepdown.Reason
	// StepSeconds is the simulated step, if any.
	StepSeconds *float64
	// Hold is how long the drill stays in stepdown (5 s if zero).
	Hold time.Duration
}

// ErrBusy is wrapped by Drill when the state is not ok.
var ErrBusy = announce.ErrBusy

// Drill starts a drill. It fails with ErrBusy unless the state is ok.
func (s *Server) Drill(r DrillRequest) error {
	if r.Hold == 0 {
		r.Hold = defaultDrillHold
	}
	if r.Hold < 0 || r.Hold > s.cfg.MaxDrillHold {
		return fmt.Errorf("drill hold %s is not between 0 and stepdown.max_drill_hold (%s)", r.Hold, s.cfg.MaxDrillHold)
	}
	return s.ann.Drill(r.Reason, r.StepSeconds, r.Hold)
}

func (s *Server) drillFrom(c *client, m stepdown.Message) {
	if !s.mayDrill(c.cred, c.credErr) {
		s.met.drills.WithLabelValues("forbidden").Inc()
		s.limit.Log(slog.LevelWarn, "drill refused: only root, clockwatch's uid and stepdown.drill_uids may drill", "pid", c.cred.PID, "uid", c.cred.UID)
		c.sendError(stepdown.CodeForbidden, fmt.Sprintf("uid %d may not drill: only root, clockwatch's uid and stepdown.drill_uids", c.cred.UID))
		return
	}
	if reasons := stepdown.DrillReasons(); m.Reason != "" && !slices.Contains(reasons, m.Reason) {
		s.met.drills.WithLabelValues("bad_request").Inc()
		c.sendError(stepdown.CodeBadRequest, fmt.Sprintf("drill reason %q is not one of %s", m.Reason, joinReasons(reasons)))
		return
	}
	hold, err := drillHold(m.HoldSeconds, s.cfg.MaxDrillHold)
	if err != nil {
		s.met.drills.WithLabelValues("bad_request").Inc()
		c.sendError(stepdown.CodeBadRequest, err.Error())
		return
	}
	r := DrillRequest{Reason: m.Reason, StepSeconds: m.StepSeconds, Hold: hold}
	if err := s.Drill(r); err != nil {
		code, result := stepdown.CodeBadRequest, "bad_request"
		if errors.Is(err, ErrBusy) {
			code, result = stepdown.CodeBusy, "busy"
		}
		s.met.drills.WithLabelValues(result).Inc()
		c.sendError(code, err.Error())
		return
	}
	s.met.drills.WithLabelValues("started").Inc()
	s.log.Info("drill started", "pid", c.cred.PID, "uid", c.cred.UID, "reason", r.Reason, "hold", r.Hold)
}

func joinReasons(rs []stepdown.Reason) string {
	ss := make([]string, len(rs))
	for i, r := range rs {
		ss[i] = string(r)
	}
	return strings.Join(ss, ", ")
}

func (s *Server) ack(c *client, seq uint64) {
	s.mu.Lock()
	rec, known := s.sentAt[seq%sentRing], seq > 0 && seq <= s.snap.Seq
	s.mu.Unlock()
	if !known {
		c.sendError(stepdown.CodeBadRequest, fmt.Sprintf("ack of seq %d, which was never sent", seq))
		return
	}
	if seq <= c.lastAck {
		return // a repeated ack counts once
	}
	c.lastAck = seq
	s.met.acks.Inc()
	if rec.seq == seq && seq > c.helloSeq {
		s.met.ackLatency.Observe(time.Since(rec.at).Seconds())
	}
}
