// Command kube-controller-manager is the real Kubernetes controller manager
// (here for its DaemonSet controller and the kube-root-ca.crt publisher),
// built from k8s.io/kubernetes at the release go.mod names, for clockwatch's
// opt-in kubelet test only (make test-kubelet; see test/kubelet).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
