#!/usr/bin/env bash
# Fetches the Linux kernel that test/vm boots under qemu: Debian's cloud
# kernel (small, virtio and serial console built in), from Debian's own package
# archive with apt-get download, unpacked into a fixed cache path. Safe to run
# again: it does nothing when the kernel is already there.
#
# test/vm looks for the kernel at $CLOCKWATCH_TEST_KERNEL, else at
# /var/cache/clockwatch-test/vmlinuz.
set -euo pipefail

cache=/var/cache/clockwatch-test
kernel=$cache/vmlinuz
[ -s "$kernel" ] && exit 0

# The versioned package behind the metapackage, e.g. linux-image-6.1.0-57-cloud-amd64.
pkg_of() { apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }

mkdir -p "$cache"
work=$(mktemp -d "$cache/.fetch.XXXXXX")
# apt-get download fetches as the _apt user where it can.
chmod 0755 "$work"
chown _apt "$work" 2>/dev/null || true
trap 'rm -rf "$work"' EXIT

# Resolve and download; without package lists, or with stale ones naming a
# version the archive no longer has, update them once and try again.
fetch() {
	pkg=$(pkg_of)
	[ -n "$pkg" ] && (cd "$work" && apt-get download -qq "$pkg")
}
if ! fetch; then
	apt-get update -qq
	fetch || { echo "40-vm.sh: cannot download linux-image-cloud-amd64's kernel package" >&2; exit 1; }
fi
dpkg-deb --fsys-tarfile "$work"/"$pkg"_*.deb | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
# The package is kept: scripts/kernel-modules.sh takes the modules 41-ptp.sh,
# 42-disk.sh and the kubelet VM need from it instead of downloading it again
# (three downloads of the same kernel package on a fresh machine before).
mkdir -p "$cache/debs"
mv "$work"/"$pkg"_*.deb "$cache/debs/"
src=$(ls "$work"/boot/vmlinuz-* | head -n1)
install -m 0644 "$src" "$kernel.tmp"
printf '%s\n' "$pkg" >"$cache/vmlinuz.package"
mv "$kernel.tmp" "$kernel"
echo "40-vm.sh: $kernel from $pkg"
