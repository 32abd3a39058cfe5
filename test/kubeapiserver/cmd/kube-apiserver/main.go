// Command kube-apiserver is the real Kubernetes API server, built from
// k8s.io/kubernetes at the release go.mod names, for clockwatch's Kubernetes
// tests only (test/kubeapiserver). It is its own module so that the daemon's
// build list never sees k8s.io/kubernetes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
