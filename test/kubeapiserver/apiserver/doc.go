// Package apiserver runs a real kube-apiserver (../cmd/kube-apiserver, built
// from k8s.io/kubernetes) against Debian's etcd on loopback, and tests
// clockwatch's manifests and its Kubernetes transport against it: the
// manifests are accepted (server-side dry run, with prometheus-operator's
// CRDs from its Go module), and a running clockwatch authenticated as the
// manifest's ServiceAccount (a TokenRequest token, RBAC enforced) keeps the
// Node condition and posts the Events on a drill and on an offset from a real
// chronyd -x; without any one verb of the ClusterRole it cannot.
//
// Opt-in (CLOCKWATCH_KUBE_APISERVER_TEST=1, make test-kubernetes): building
// the API server takes minutes (docs/kubernetes.md, "Tests").
package apiserver
