#!/usr/bin/env bash
# Fetches veth.ko for the kernel test/vm boots (40-vm.sh wrote its package
# name beside it): the guest of the ptp4l and ntpd sync test links two
# network namespaces with a veth pair, and the cloud kernel has veth as a
# module only. From Debian's archive (scripts/kernel-modules.sh); does nothing
# when the module is there already.
#
# test/vm looks for it at /var/cache/clockwatch-test/modules/<kernel package>/veth.ko.
set -euo pipefail
dest=$("$(dirname "$0")/../kernel-modules.sh" 41-ptp.sh veth)
echo "41-ptp.sh: $dest/veth.ko"
