package promtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Alert is one alert in an Alertmanager webhook notification.
type Alert struct {
	Status      string            `json:"status"` // "firing" or "resolved"
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`

	// Received is when the webhook got the notification (set by Webhook,
	// not sent by Alertmanager).
	Received time.Time `json:"-"`
}

// notification is the body Alertmanager's webhook receiver posts (version 4).
type notification struct {
	Version string  `json:"version"`
	Status  string  `json:"status"`
	Alerts  []Alert `json:"alerts"`
}

// Webhook is an HTTP server that records every alert Alertmanager posts to it.
type Webhook struct {
	// URL is where Alertmanager should post.
	URL string

	mu      sync.Mutex
	alerts  []Alert
	changed chan struct{} // closed and replaced on every notification
	errs    []string
}

// NewWebhook starts a webhook receiver on loopback, closed when the test ends.
func NewWebhook(t testing.TB) *Webhook {
	t.Helper()
	w := &Webhook{changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(srv.Close)
	w.URL = srv.URL + "/alerts"
	return w
}

func (w *Webhook) serve(rw http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var n notification
	err := json.NewDecoder(r.Body).Decode(&n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs = append(w.errs, fmt.Sprintf("decoding a notification: %v", err))
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	for _, a := range n.Alerts {
		a.Received = now
		w.alerts = append(w.alerts, a)
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// Alerts returns every alert received so far, oldest first.
func (w *Webhook) Alerts() []Alert {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Alert(nil), w.alerts...)
}

// Wait returns the first alert received, from the start or later, that
// has the given status and whose labels include every pair in labels. It
// fails the test after timeout, listing what was received.
func (w *Webhook) Wait(t testing.TB, status string, labels map[string]string, timeout time.Duration) Alert {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		changed := w.changed
		for _, a := range w.alerts {
			if a.Status == status && matches(a.Labels, labels) {
				w.mu.Unlock()
				return a
			}
		}
		errs := strings.Join(w.errs, "; ")
		w.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s alert with labels %v within %s; received: %s; errors: %s", status, labels, timeout, w.summary(), errs)
			return Alert{}
		}
	}
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// summary lists the alerts received, one per line, for failure messages.
func (w *Webhook) summary() string {
	var b strings.Builder
	for _, a := range w.Alerts() {
		fmt.Fprintf(&b, "\n  %s %s %v", a.Received.Format("15:04:05.000"), a.Status, a.Labels)
	}
	if b.Len() == 0 {
		return "nothing"
	}
	return b.String()
}
