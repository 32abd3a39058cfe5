#!/usr/bin/env bash
# Fetches the virtio block modules for the kernel test/vm boots (40-vm.sh
# wrote its package name beside it): the power-cut test puts clockwatch's
# state directory on an ext4 virtio disk, and the cloud kernel has ext4 built
# in but virtio, its PCI transport and virtio_blk as modules only. From
# Debian's archive (scripts/kernel-modules.sh); does nothing when the
# modules are there already.
#
# test/vm looks for them in /var/cache/clockwatch-test/modules/<kernel package>/
# (vm.DiskModules lists them in load order).
set -euo pipefail
mods="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk"
# shellcheck disable=SC2086 # one word per module
dest=$("$(dirname "$0")/../kernel-modules.sh" 42-disk.sh $mods)
echo "42-disk.sh: $mods in $dest"
