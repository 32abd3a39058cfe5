#!/usr/bin/env bash
# Builds the Debian 12 root the systemd VM test boots: minbase plus systemd as
# init, dbus (the system bus), chrony (the time daemon clockwatch reads over
# its unix socket), udev (every Debian with systemd has it; it applies the
# package's rule for /dev/vmclock0) and kmod (insmod of the VMClock driver),
# with systemd-timesyncd's .deb in /root/debs (it conflicts with chrony: the
# guest script installs it once the chrony checks are done), packed as an
# uncompressed newc cpio archive the kernel unpacks as its initramfs (no disk
# image; the one kernel module, ptp_vmclock, comes with the test's overlay).
# Cached: does nothing when OUT already exists (the test names OUT after this
# script's hash).
#
# Usage: mkroot.sh OUT.cpio [MIRROR]
#
# Packages are configured inside a chroot on this machine, so a policy-rc.d
# that refuses every service start is in place for the whole second stage
# (nothing may start a daemon here, least of all chronyd, which sets the
# clock), and removed from the image afterwards so that the guest behaves
# like a normal machine, where chronyd starts at boot (and may only ever
# touch the VM's clock).
set -euo pipefail
out=$1
mirror=${2:-http://deb.debian.org/debian}
[ -s "$out" ] && exit 0

mkdir -p "$(dirname "$out")"
root=$(mktemp -d "$(dirname "$out")/.root.XXXXXX")
cleanup() {
	# debootstrap bind-mounts /dev when it runs in a container: unmount
	# everything under the root first, and never let rm cross a mount point.
	for m in proc sys dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
	if grep -qF " $root/" /proc/mounts; then
		echo "mkroot.sh: mounts left under $root; not removing it" >&2
		return
	fi
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT

debootstrap --foreign --variant=minbase --include=systemd,systemd-sysv,passwd,procps,dbus,chrony,udev,kmod bookworm "$root" "$mirror" >&2
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
[ "$("$root/usr/sbin/policy-rc.d"; echo $?)" = 101 ] || { echo "mkroot.sh: policy-rc.d not in place" >&2; exit 1; }
chroot "$root" /debootstrap/debootstrap --second-stage >&2
# The same archive as the root, so its version matches the root's systemd.
mkdir -p "$root/root/debs"
chroot "$root" apt-get update -qq >&2
chroot "$root" sh -c 'cd /root/debs && apt-get download -qq systemd-timesyncd' >&2
ls "$root"/root/debs/systemd-timesyncd_*.deb >/dev/null
rm -f "$root/usr/sbin/policy-rc.d"

# A machine identity, no password prompts, and only what the test needs.
echo clockwatch-vm >"$root/etc/hostname"
: >"$root/etc/machine-id"
chroot "$root" passwd -d root >/dev/null
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
	"$root"/usr/share/man/* "$root"/usr/share/locale/*
# The kernel needs /dev/console in the initramfs for init's first output.
mkdir -p "$root/dev"
[ -e "$root/dev/console" ] || mknod -m 600 "$root/dev/console" c 5 1

for m in proc sys dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
(cd "$root" && find . -xdev -print0 | cpio --null -o -H newc --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
echo "mkroot.sh: $out ($(du -h "$out" | cut -f1))" >&2
