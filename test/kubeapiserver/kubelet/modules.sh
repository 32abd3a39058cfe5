#!/usr/bin/env bash
# Fetches the network modules the kubelet VM needs (make test-kubelet; not in
# scripts/deps.d, so that make test never downloads them): the cloud kernel
# test/vm boots has virtio's PCI transport and virtio_net as modules only, and
# the guest reaches the kube-apiserver over a virtio NIC. From Debian's archive
# with scripts/kernel-modules.sh, as scripts/deps.d/42-disk.sh does (the same
# package, the same cache directory); does nothing when they are there.
#
# Usage: modules.sh; prints the directory. The guest loads MODS in order.
set -euo pipefail
exec "$(dirname "$0")/../../../scripts/kernel-modules.sh" modules.sh virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net
