// Package kubernetes is the announcer's Kubernetes transport
// (--kubernetes.node-name): it keeps a condition on the node's Node object
// that mirrors the stepdown state, and posts an Event on the Node for each
// stepdown and resume, so that the cluster sees what the node's clock does
// (docs/kubernetes.md, "What the cluster sees").
//
// It follows node-problem-detector's conventions: one condition type
// (ClockUntrusted), status True while the problem holds (stepdown), False
// when the clock is trusted, Unknown while clockwatch does not know yet; the
// reason is the stepdown reason in CamelCase, the message its detail; the
// last transition time moves only when the status does, the heartbeat time
// at every update. Events are aggregated (a repeat of the same event within
// ten minutes patches the first one's count) and rate limited per node as
// the kubelet's are (a burst of 25, then one per five minutes).
//
// The API server is never in the way of the socket or the segment: the
// transport reads the announcer through a Subscription (which never blocks
// the announcer), writes the condition from the latest state whenever it can
// (an outage is retried with backoff and the state then is what is written,
// not a replay), and drops the Events it cannot post in time (counted).
//
// It talks to the API server with the small REST client of internal/kubernetes
// (two requests: a strategic merge patch of nodes/status and events' create
// and patch, plus one get of the Node at start) rather than client-go: the
// measured cost of client-go is in docs/kubernetes.md ("Cost").
package kubernetes
