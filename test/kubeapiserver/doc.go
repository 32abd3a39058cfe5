// Package kubeapiserver is clockwatch's Kubernetes test module, its own Go
// module so that k8s.io/kubernetes never enters the daemon's build list
// (docs/kubernetes.md, "Tests"):
//
//   - cmd/kube-apiserver: the real API server, from k8s.io/kubernetes at a
//     release with each k8s.io/* staging module at its published version;
//   - manifests: deploy/kubernetes and deploy/helm/clockwatch rendered
//     (kustomize, helm lint and helm template) and decoded strictly into the
//     k8s.io/api and prometheus-operator types (in make test);
//   - apiserver: the manifests accepted by a real kube-apiserver with Debian's
//     etcd (server-side dry run, prometheus-operator's CRDs), and a running
//     clockwatch authenticated as the manifest's ServiceAccount, RBAC enforced,
//     setting the Node condition and posting Events (make test-kubernetes).
package kubeapiserver
