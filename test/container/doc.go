// Package container runs clockwatch's image (internal/ociimage, make image)
// under a real podman with the DaemonSet's security context and mounts
// (deploy/kubernetes): non-root, every capability dropped, a read-only root,
// the runtime's default seccomp profile, host network, chronyd's socket
// directory, /run/clockwatch and /var/lib/clockwatch as host paths, against a
// real chronyd -x on the host. A second container, the application pod of
// examples/kubernetes, subscribes through the shared host path and receives
// a drill's stepdown and resume.
//
// podman keeps its images and containers in the test's own directory
// (--root, --runroot), never in the host's /var/lib/containers.
package container
