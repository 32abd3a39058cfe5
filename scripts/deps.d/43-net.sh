#!/usr/bin/env bash
# Fetches the virtio network modules for the kernel test/vm boots (40-vm.sh
# wrote its package name beside it): the fleet test (TestFleetPeersInVM)
# gives each of three guests a user-mode network, and the cloud kernel has
# virtio_net (with failover and net_failover, which it needs) as modules
# only. From Debian's archive (scripts/kernel-modules.sh); does nothing when
# the modules are there already.
#
# test/vm looks for them in /var/cache/clockwatch-test/modules/<kernel package>/
# (vm.NetModules lists them in load order, after the virtio ones of 42-disk.sh).
set -euo pipefail
mods="failover net_failover virtio_net"
# shellcheck disable=SC2086 # one word per module
dest=$("$(dirname "$0")/../kernel-modules.sh" 43-net.sh $mods)
echo "43-net.sh: $mods in $dest"
