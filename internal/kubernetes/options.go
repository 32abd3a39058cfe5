package kubernetes

import "fmt"

// Options are the --kubernetes.* flags: the node whose Node the transport
// (internal/transport/kubernetes) keeps its condition on, and the
// credentials every user of the API server shares (the transport, the peers'
// discovery).
type Options struct {
	// NodeName is this node's Node (--kubernetes.node-name, from the
	// downward API's spec.nodeName). Empty: the transport is off.
	NodeName string
	// Kubeconfig is a kubeconfig file (--kubernetes.kubeconfig); empty:
	// the pod's service account (in-cluster).
	Kubeconfig string
}

// Enabled reports whether the Kubernetes transport is on.
func (o Options) Enabled() bool { return o.NodeName != "" }

// NewClient returns a client with o's credentials: o.Kubeconfig's, else the
// pod's service account's.
func NewClient(o Options, getenv func(string) string) (*Client, error) {
	var c *Client
	var err error
	if o.Kubeconfig != "" {
		c, err = KubeconfigClient(o.Kubeconfig)
	} else {
		c, err = InClusterConfig(getenv, "")
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return c, nil
}
