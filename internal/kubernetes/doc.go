// Package kubernetes is clockwatch's small REST client of the Kubernetes API
// server (standard library only) and the --kubernetes.* options: what the
// Kubernetes transport (internal/transport/kubernetes: the Node condition and
// Events) and the peers' discovery (internal/peers: the Node list) send.
//
// It makes the few requests they need, rather than importing client-go (the
// measured cost of client-go is in docs/kubernetes.md, "Cost"): a get of the
// Node, a strategic merge patch of nodes/status, events' create and patch, and
// the Node list. Credentials come from a kubeconfig or the pod's service
// account; a redirect is never followed, plain http is for loopback only, and
// an error quotes at most a bounded excerpt of the body.
package kubernetes
