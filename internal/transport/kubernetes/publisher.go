package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/announce"
	kubeclient "github.com/clockwatch/clockwatch/internal/kubernetes"
)

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
func New(o kubeclient.Options, ann announce.Subscribable, getenv func(string) string, logger *slog.Logger) (*Publisher, error) {
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
func NewWithClient(c *kubeclient.Client, node string, ann announce.Subscribable, logger *slog.Logger) *Publisher {
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
