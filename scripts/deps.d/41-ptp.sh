#!/usr/bin/env bash
# Fetches veth.ko for the kernel test/vm boots (40-vm.sh wrote its package
# name beside it): the guest of the ptp4l and ntpd sync test links two
# network namespaces with a veth pair, and the cloud kernel has veth as a
# module only. From Debian's archive with apt-get download, like the kernel;
# does nothing when the module is there already.
#
# test/vm looks for it at /var/cache/clockwatch-test/modules/<kernel package>/veth.ko.
set -euo pipefail

cache=/var/cache/clockwatch-test
[ -s "$cache/vmlinuz.package" ] || { echo "41-ptp.sh: no $cache/vmlinuz.package (run 40-vm.sh first)" >&2; exit 1; }
pkg=$(cat "$cache/vmlinuz.package")
dest=$cache/modules/$pkg
[ -s "$dest/veth.ko" ] && exit 0

mkdir -p "$cache/modules"
work=$(mktemp -d "$cache/.fetch.XXXXXX")
chmod 0755 "$work"
chown _apt "$work" 2>/dev/null || true
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && apt-get download -qq "$pkg"); then
	apt-get update -qq
	(cd "$work" && apt-get download -qq "$pkg") || { echo "41-ptp.sh: cannot download $pkg" >&2; exit 1; }
fi
dpkg-deb --fsys-tarfile "$work"/"$pkg"_*.deb | tar -x -C "$work" --wildcards './lib/modules/*/kernel/drivers/net/veth.ko'
mkdir -p "$dest"
install -m 0644 "$work"/lib/modules/*/kernel/drivers/net/veth.ko "$dest/veth.ko.tmp"
mv "$dest/veth.ko.tmp" "$dest/veth.ko"
echo "41-ptp.sh: $dest/veth.ko"
