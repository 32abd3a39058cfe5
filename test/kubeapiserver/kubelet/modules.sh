#!/usr/bin/env bash
# Fetches the network modules the kubelet VM needs (make test-kubelet; not in
# scripts/deps.d, so that make test never downloads them): the cloud kernel
# test/vm boots has virtio's PCI transport and virtio_net as modules only, and
# the guest reaches the kube-apiserver over a virtio NIC. From Debian's archive
# with apt-get download, like scripts/deps.d/42-disk.sh (the same package,
# the same cache directory); does nothing when they are there already.
#
# Usage: modules.sh; prints the directory. The guest loads MODS in order.
set -euo pipefail

cache=/var/cache/clockwatch-test
[ -s "$cache/vmlinuz.package" ] || { echo "modules.sh: no $cache/vmlinuz.package (run scripts/deps.d/40-vm.sh)" >&2; exit 1; }
pkg=$(cat "$cache/vmlinuz.package")
dest=$cache/modules/$pkg
mods="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net"
missing=
for m in $mods; do [ -s "$dest/$m.ko" ] || missing=1; done
if [ -n "$missing" ]; then
	mkdir -p "$dest"
	work=$(mktemp -d "$cache/.fetch.XXXXXX")
	chmod 0755 "$work"
	chown _apt "$work" 2>/dev/null || true
	trap 'rm -rf "$work"' EXIT
	if ! (cd "$work" && apt-get download -qq "$pkg"); then
		apt-get update -qq
		(cd "$work" && apt-get download -qq "$pkg") || { echo "modules.sh: cannot download $pkg" >&2; exit 1; }
	fi
	dpkg-deb --fsys-tarfile "$work"/"$pkg"_*.deb | tar -x -C "$work" --wildcards \
		'./lib/modules/*/kernel/drivers/virtio/virtio*.ko' './lib/modules/*/kernel/net/core/failover.ko' \
		'./lib/modules/*/kernel/drivers/net/net_failover.ko' './lib/modules/*/kernel/drivers/net/virtio_net.ko'
	for m in $mods; do
		src=$(find "$work/lib/modules" -name "$m.ko" | head -n1)
		[ -n "$src" ] || { echo "modules.sh: $m.ko not in $pkg" >&2; exit 1; }
		install -m 0644 "$src" "$dest/$m.ko.tmp"
		mv "$dest/$m.ko.tmp" "$dest/$m.ko"
	done
fi
echo "$dest"
