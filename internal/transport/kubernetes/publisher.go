package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// EventNamespace is where Events about Nodes go, as the kubelet's do.
const EventNamespace = "default"

// Component is the Events' source and reporting component.
const Component = "clockwatch"

// The Events' aggregation and rate limit: the kubelet's (client-go's
// EventCorrelator: a burst of 25, then one per five minutes per object; a
// repeat within ten minutes raises the first one's count).
const (
	eventBurst      = 25
	eventRefill     = 5 * time.Minute
	aggregateWindow = 10 * time.Minute
	eventQueue      = 64
	// subscriptionBuffer is how many announcements wait for Run.
	subscriptionBuffer = 64
	eventAttempts      = 4
	heartbeatPeriod    = 5 * time.Minute
	defaultBackoff     = time.Second
	defaultMaxBackoff  = time.Minute
)

// Metric names.
const (
	MetricRequests      = "clockwatch_kubernetes_requests_total"
	MetricEventsDropped = "clockwatch_kubernetes_events_dropped_total"
	MetricConditionUp   = "clockwatch_kubernetes_condition_current"
)

// Publisher is the transport: New subscribes it to the announcer, Run
// publishes.
type Publisher struct {
	c    *kubeclient.Client
	node string
	log  *slog.Logger
	now  func() time.Time
	// sub is the subscription to the announcer; nil without one (Run
	// then fails).
	sub *announce.Subscription

	// BackoffMin and BackoffMax bound the waits between retries; tests
	// shorten them.
	BackoffMin, BackoffMax time.Duration

	requests *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	current  prometheus.Gauge

	mu  sync.Mutex
	uid string
}

// New returns the transport for o, subscribed to ann, or an error naming
// what is wrong with the credentials.
func New(o kubeclient.Options, ann announce.Source, getenv func(string) string, logger *slog.Logger) (*Publisher, error) {
	c, err := kubeclient.NewClient(o, getenv)
	if err != nil {
		return nil, err
	}
	return NewWithClient(c, o.NodeName, ann, logger), nil
}

// NewWithClient returns the transport with a client of the caller's,
// subscribed to ann now (nil: not subscribed), so that no announcement
// after the start is missed; Run shows the state at once whatever the
// buffer holds.
func NewWithClient(c *kubeclient.Client, node string, ann announce.Source, logger *slog.Logger) *Publisher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c.SetUserAgent("clockwatch/" + node)
	var sub *announce.Subscription
	if ann != nil {
		sub = ann.Subscribe("kubernetes", announce.Buffered(subscriptionBuffer))
	}
	return &Publisher{c: c, node: node, log: logger.With("component", "kubernetes", "node", node), now: time.Now, sub: sub,
		BackoffMin: defaultBackoff, BackoffMax: defaultMaxBackoff,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "Requests to the Kubernetes API server, by request (get_node, patch_condition, create_event, patch_event) and result (ok, the HTTP status of a refusal, redirect: never followed, or error)."},
			[]string{"request", "result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEventsDropped,
			Help: "Stepdown and resume Events not posted on the Node, by why: rate_limited (the kubelet's limit), queue_full, failed (the API server refused or was unreachable after retries)."},
			[]string{"why"}),
		current: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricConditionUp,
			Help: "1 when the Node's " + ConditionType + " condition shows the current stepdown state, 0 while an update is pending (the API server unreachable or refusing)."}),
	}
}

// Collector exports the transport's metrics.
func (p *Publisher) Collector() prometheus.Collector {
	return collectors{p.requests, p.dropped, p.current}
}

type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

func (p *Publisher) count(request string, err error) {
	result := "ok"
	var ae *kubeclient.APIError
	var re *kubeclient.RedirectError
	switch {
	case errors.As(err, &ae):
		result = fmt.Sprint(ae.Code)
	case errors.As(err, &re):
		result = "redirect"
	case err != nil:
		result = "error"
	}
	p.requests.WithLabelValues(request, result).Inc()
}

// Close ends the subscription when Run will not run: a start that fails
// after the transport was made.
func (p *Publisher) Close() {
	if p.sub != nil {
		p.sub.Close()
	}
}

// Run publishes until ctx ends; it ends the subscription.
func (p *Publisher) Run(ctx context.Context) error {
	sub := p.sub
	if sub == nil {
		return errors.New("kubernetes: no announcer to follow")
	}
	defer sub.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	poke := make(chan struct{}, 1)
	poke <- struct{}{}
	events := make(chan announce.Announcement, eventQueue)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.conditions(ctx, sub.Latest, poke) }()
	go func() { defer wg.Done(); p.events(ctx, events) }()
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case an, ok := <-sub.C():
			if !ok {
				return nil
			}
			select {
			case events <- an:
			default:
				p.dropped.WithLabelValues("queue_full").Inc()
			}
			select {
			case poke <- struct{}{}:
			default: // an update is pending already: it will read the latest state
			}
		}
	}
}

// backoff is an exponential backoff with jitter.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}

func (b *backoff) reset() { b.cur = 0 }

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
