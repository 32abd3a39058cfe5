#!/usr/bin/env bash
# Fetches the virtio block modules for the kernel test/vm boots (40-vm.sh
# wrote its package name beside it): the power-cut test puts clockwatch's
# state directory on an ext4 virtio disk, and the cloud kernel has ext4 built
# in but virtio, its PCI transport and virtio_blk as modules only. From
# Debian's archive with apt-get download, like the kernel; does nothing when
# the modules are there already.
#
# test/vm looks for them in /var/cache/clockwatch-test/modules/<kernel package>/
# (vm.DiskModules lists them in load order).
set -euo pipefail

cache=/var/cache/clockwatch-test
[ -s "$cache/vmlinuz.package" ] || { echo "42-disk.sh: no $cache/vmlinuz.package (run 40-vm.sh first)" >&2; exit 1; }
pkg=$(cat "$cache/vmlinuz.package")
dest=$cache/modules/$pkg
mods="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk"
missing=
for m in $mods; do [ -s "$dest/$m.ko" ] || missing=1; done
[ -z "$missing" ] && exit 0

mkdir -p "$dest"
work=$(mktemp -d "$cache/.fetch.XXXXXX")
chmod 0755 "$work"
chown _apt "$work" 2>/dev/null || true
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && apt-get download -qq "$pkg"); then
	apt-get update -qq
	(cd "$work" && apt-get download -qq "$pkg") || { echo "42-disk.sh: cannot download $pkg" >&2; exit 1; }
fi
dpkg-deb --fsys-tarfile "$work"/"$pkg"_*.deb | tar -x -C "$work" --wildcards \
	'./lib/modules/*/kernel/drivers/virtio/virtio.ko' './lib/modules/*/kernel/drivers/virtio/virtio_ring.ko' \
	'./lib/modules/*/kernel/drivers/virtio/virtio_pci*.ko' './lib/modules/*/kernel/drivers/block/virtio_blk.ko'
for m in $mods; do
	src=$(find "$work/lib/modules" -name "$m.ko" | head -n1)
	[ -n "$src" ] || { echo "42-disk.sh: $m.ko not in $pkg" >&2; exit 1; }
	install -m 0644 "$src" "$dest/$m.ko.tmp"
	mv "$dest/$m.ko.tmp" "$dest/$m.ko"
done
echo "42-disk.sh: $mods in $dest"
