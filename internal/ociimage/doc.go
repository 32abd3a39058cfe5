// Package ociimage writes clockwatch's container image as an OCI image
// layout archive (what `podman load` and `skopeo copy oci-archive:` read)
// straight from the static binary, without a container engine, a daemon or
// the network.
//
// The archive is a pure function of its inputs: every file in it has the
// same owner, mode and modification time (the commit's time, from
// SOURCE_DATE_EPOCH), entries are written in a fixed order and the JSON is
// encoded with sorted keys, so the same commit gives the same image digest on
// any machine (docs/kubernetes.md, "The image").
package ociimage
