// Command kube-scheduler is the real Kubernetes scheduler (it binds the
// DaemonSet's pods to their node), built from k8s.io/kubernetes at the
// release go.mod names, for clockwatch's opt-in kubelet test only (make
// test-kubelet; see apiserver/kubelet_test.go).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
