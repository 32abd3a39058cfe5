// Command pause is the pod sandbox's process for the kubelet VM test (make
// test-kubelet): containerd's CRI runs one per pod, from its sandbox_image,
// which the test cannot pull (registry.k8s.io's pause is off this machine's
// network). It does what the upstream pause does: nothing until SIGINT or
// SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
