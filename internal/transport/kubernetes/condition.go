package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/stepdown"
)

// ConditionType is the Node condition clockwatch keeps. Not
// ClockUnsynchronized: EKS' node monitoring agent sets that one from the
// kernel's STA_UNSYNC, and two writers of one condition would flap it.
const ConditionType = "ClockUntrusted"

// Condition statuses (core/v1 ConditionStatus).
const (
	statusTrue    = "True"
	statusFalse   = "False"
	statusUnknown = "Unknown"
)

// conditions keeps the Node's condition on the latest state: after each
// poke, at each heartbeat, and until an update succeeds.
func (p *Publisher) conditions(ctx context.Context, latest func() announce.Snapshot, poke <-chan struct{}) {
	bo := backoff{min: p.BackoffMin, max: p.BackoffMax}
	var shown *kubeclient.Condition // what the Node shows, as far as we know
	known := false                  // shown was read from the Node (or written by us)
	failing := false
	heartbeat := time.NewTimer(heartbeatPeriod)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poke:
		case <-heartbeat.C:
		}
		for {
			err := func() error {
				if !known {
					n, err := p.c.GetNode(ctx, p.node)
					p.count("get_node", err)
					if err != nil {
						return err
					}
					p.mu.Lock()
					p.uid = n.Metadata.UID
					p.mu.Unlock()
					for _, c := range n.Status.Conditions {
						if c.Type == ConditionType {
							shown = &c
						}
					}
					known = true
				}
				cond := ConditionOf(latest(), p.now())
				if shown != nil && shown.Status == cond.Status {
					cond.LastTransitionTime = shown.LastTransitionTime
				}
				err := p.c.PatchNodeCondition(ctx, p.node, cond)
				p.count("patch_condition", err)
				if err != nil {
					return err
				}
				shown = &cond
				return nil
			}()
			if err == nil {
				if failing {
					p.log.Info("node condition updated again", "status", shown.Status, "reason", shown.Reason)
				}
				failing = false
				p.current.Set(1)
				bo.reset()
				break
			}
			p.current.Set(0)
			if ctx.Err() != nil {
				return
			}
			if !failing {
				p.log.Warn("cannot update the node condition; retrying with backoff (the socket and the segment are not affected)", "err", err)
			}
			failing = true
			if !loop.Sleep(ctx, bo.next()) {
				return
			}
		}
		if !heartbeat.Stop() {
			select {
			case <-heartbeat.C:
			default:
			}
		}
		heartbeat.Reset(heartbeatPeriod)
	}
}

// ConditionOf is the Node condition for a state, at now (its heartbeat and,
// unless the caller keeps the previous one, its transition).
func ConditionOf(s announce.Snapshot, now time.Time) kubeclient.Condition {
	now = now.UTC().Truncate(time.Second)
	c := kubeclient.Condition{Type: ConditionType, LastHeartbeatTime: now, LastTransitionTime: now}
	detail := s.Last.Event.Detail
	switch {
	case s.Starting || s.State == stepdown.StateUnknown || s.State == "":
		c.Status, c.Reason = statusUnknown, "Starting"
		c.Message = "clockwatch waits for every time source's first report"
	case s.State == stepdown.StateStepdown:
		c.Status, c.Reason = statusTrue, CamelCase(string(s.Reason))
		c.Message = detail
		if s.Drill {
			c.Reason = "Drill" + c.Reason
			if c.Reason == "DrillDrill" {
				c.Reason = "Drill"
			}
		}
	default:
		c.Status, c.Reason = statusFalse, "ClockTrusted"
		c.Message = "clockwatch trusts this node's clock"
		if detail != "" {
			c.Message += " (" + detail + ")"
		}
	}
	if c.Message == "" {
		c.Message = string(s.Reason)
	}
	c.Message = fmt.Sprintf("%s; clock epoch %d", c.Message, s.Epoch)
	return c
}

// CamelCase turns a stepdown reason (error_bound) into a condition reason
// (ErrorBound), as Kubernetes' reasons are written.
func CamelCase(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
