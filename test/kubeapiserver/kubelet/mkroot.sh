#!/usr/bin/env bash
# Builds the Debian 12 root the kubelet VM boots (make test-kubelet,
# apiserver/kubelet_test.go): minbase plus systemd as init, dbus, Debian's
# containerd and runc (the container runtime the kubelet drives over CRI),
# iproute2 (the guest's static address) and chrony (the time daemon the
# DaemonSet's clockwatch reads), packed as an uncompressed newc cpio archive
# the kernel unpacks as its initramfs. Cached: does nothing when OUT already
# exists (the test names OUT after this script's hash). The same recipe as
# test/systemdvm/mkroot.sh, with another package list.
#
# Usage: mkroot.sh OUT.cpio [MIRROR]
#
# Packages are configured inside a chroot on this machine with a policy-rc.d
# that refuses every service start (nothing may start a daemon here, least of
# all chronyd or containerd), removed from the image afterwards so that the
# guest boots like a normal machine.
set -euo pipefail
out=$1
mirror=${2:-http://deb.debian.org/debian}
[ -s "$out" ] && exit 0

mkdir -p "$(dirname "$out")"
root=$(mktemp -d "$(dirname "$out")/.kroot.XXXXXX")
cleanup() {
	for m in proc sys dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
	if grep -qF " $root/" /proc/mounts; then
		echo "mkroot.sh: mounts left under $root; not removing it" >&2
		return
	fi
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT

debootstrap --foreign --variant=minbase \
	--include=systemd,systemd-sysv,passwd,procps,dbus,iproute2,chrony,containerd,runc \
	bookworm "$root" "$mirror" >&2
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
[ "$("$root/usr/sbin/policy-rc.d"; echo $?)" = 101 ] || { echo "mkroot.sh: policy-rc.d not in place" >&2; exit 1; }
chroot "$root" /debootstrap/debootstrap --second-stage >&2
rm -f "$root/usr/sbin/policy-rc.d"

echo clockwatch-vm >"$root/etc/hostname"
: >"$root/etc/machine-id"
chroot "$root" passwd -d root >/dev/null
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' containerd runc chrony systemd >"$root/root/versions"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
	"$root"/usr/share/man/* "$root"/usr/share/locale/*
mkdir -p "$root/dev"
[ -e "$root/dev/console" ] || mknod -m 600 "$root/dev/console" c 5 1

for m in proc sys dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
(cd "$root" && find . -xdev -print0 | cpio --null -o -H newc --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
echo "mkroot.sh: $out ($(du -h "$out" | cut -f1))" >&2
