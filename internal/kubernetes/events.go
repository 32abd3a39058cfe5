package kubernetes

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Event is a core/v1 Event (the fields the transport sets).
type Event struct {
	APIVersion     string          `json:"apiVersion"`
	Kind           string          `json:"kind"`
	Metadata       EventMeta       `json:"metadata"`
	InvolvedObject ObjectReference `json:"involvedObject"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message"`
	Source         EventSource     `json:"source"`
	FirstTimestamp time.Time       `json:"firstTimestamp"`
	LastTimestamp  time.Time       `json:"lastTimestamp"`
	Count          int32           `json:"count"`
	Type           string          `json:"type"`
	// ReportingController and ReportingInstance name who reports.
	ReportingController string `json:"reportingComponent"`
	ReportingInstance   string `json:"reportingInstance"`
}

// EventMeta is an Event's metadata.
type EventMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// ObjectReference names the Node an Event is about.
type ObjectReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// EventSource is an Event's source.
type EventSource struct {
	Component string `json:"component"`
	Host      string `json:"host"`
}

// CreateEvent posts a new Event.
func (c *Client) CreateEvent(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(ev.Metadata.Namespace)+"/events", "application/json", body, nil)
}

// PatchEventCount raises an Event's count and its last time (a repeat).
func (c *Client) PatchEventCount(ctx context.Context, namespace, name string, count int32, last time.Time) error {
	patch, err := json.Marshal(map[string]any{"count": count, "lastTimestamp": last})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPatch, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/events/"+url.PathEscape(name),
		"application/strategic-merge-patch+json", patch, nil)
}
