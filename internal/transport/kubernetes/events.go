package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/announce"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/stepdown"
)

// EventNamespace is where Events about Nodes go, as the kubelet's do.
const EventNamespace = "default"

// Component is the Events' source and reporting component.
const Component = "clockwatch"

// EventOf is the Event for an announcement: its reason, type and message.
func EventOf(an announce.Announcement) (reason, typ, message string) {
	e := an.Event
	typ = "Warning"
	switch {
	case e.Type == stepdown.TypeResume:
		reason, typ = "ClockResumed", "Normal"
	case e.Reason == stepdown.ReasonStep:
		reason = "ClockStepped"
	default:
		reason = "ClockStepdown"
	}
	var b strings.Builder
	if e.Drill {
		typ = "Normal"
		b.WriteString("drill: ")
	}
	fmt.Fprintf(&b, "%s (reason %s", e.Type, e.Reason)
	if e.Source != "" {
		fmt.Fprintf(&b, ", source %s", e.Source)
	}
	if e.StepSeconds != nil {
		fmt.Fprintf(&b, ", step %+.9gs", *e.StepSeconds)
	}
	if e.OffsetSeconds != nil {
		fmt.Fprintf(&b, ", offset %+.9gs", *e.OffsetSeconds)
	}
	fmt.Fprintf(&b, ", clock epoch %d)", e.Epoch)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return reason, typ, b.String()
}

// posted is an Event posted, for the aggregation of repeats.
type posted struct {
	name  string
	count int32
	last  time.Time
}

// events posts an Event per announcement, aggregated and rate limited.
func (p *Publisher) events(ctx context.Context, in <-chan announce.Announcement) {
	tokens := float64(eventBurst)
	refilled := p.now()
	recent := map[string]*posted{}
	for {
		var an announce.Announcement
		select {
		case <-ctx.Done():
			return
		case an = <-in:
		}
		now := p.now()
		tokens = min(eventBurst, tokens+float64(now.Sub(refilled))/float64(eventRefill))
		refilled = now
		for k, r := range recent {
			if now.Sub(r.last) > aggregateWindow {
				delete(recent, k)
			}
		}
		reason, typ, msg := EventOf(an)
		key := reason + "\x00" + typ + "\x00" + msg
		r := recent[key]
		if r == nil && tokens < 1 {
			p.dropped.WithLabelValues("rate_limited").Inc()
			continue
		}
		bo := backoff{min: p.BackoffMin, max: p.BackoffMax}
		var err error
		for attempt := 0; attempt < eventAttempts; attempt++ {
			if attempt > 0 && !loop.Sleep(ctx, bo.next()) {
				return
			}
			if r != nil {
				err = p.c.PatchEventCount(ctx, EventNamespace, r.name, r.count+1, now.UTC())
				p.count("patch_event", err)
				if err == nil {
					r.count++
					r.last = now
					break
				}
				var ae *kubeclient.APIError
				if errors.As(err, &ae) && ae.Code == 404 {
					r = nil // expired from the API server: post it anew
				}
				continue
			}
			p.mu.Lock()
			uid := p.uid
			p.mu.Unlock()
			ts := now.UTC().Truncate(time.Microsecond)
			ev := kubeclient.Event{APIVersion: "v1", Kind: "Event",
				Metadata:       kubeclient.EventMeta{Name: fmt.Sprintf("%s.%x", p.node, now.UnixNano()), Namespace: EventNamespace},
				InvolvedObject: kubeclient.ObjectReference{APIVersion: "v1", Kind: "Node", Name: p.node, UID: uid},
				Reason:         reason, Message: msg, Type: typ, Count: 1, FirstTimestamp: ts, LastTimestamp: ts,
				Source:              kubeclient.EventSource{Component: Component, Host: p.node},
				ReportingController: Component, ReportingInstance: p.node}
			err = p.c.CreateEvent(ctx, ev)
			p.count("create_event", err)
			if err == nil {
				tokens--
				recent[key] = &posted{name: ev.Metadata.Name, count: 1, last: now}
				break
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.dropped.WithLabelValues("failed").Inc()
			p.log.Warn("cannot post an Event on the node; dropped", "reason", reason, "err", err)
		}
	}
}
