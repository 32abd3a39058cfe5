// Command kubelet is the real Kubernetes node agent, built from
// k8s.io/kubernetes at the release go.mod names, for clockwatch's opt-in
// kubelet test only (make test-kubelet; see test/kubelet). It is in this
// module so that the daemon's build list never sees k8s.io/kubernetes.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
