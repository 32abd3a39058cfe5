#!/usr/bin/env bash
# Fetches kernel modules for the kernel test/vm boots (scripts/deps.d/40-vm.sh
# wrote its package name beside it) from Debian's archive with apt-get
# download, and keeps them in /var/cache/clockwatch-test/modules/<package>/.
# The cloud kernel builds its virtio drivers as modules: 42-disk.sh asks for
# virtio_blk's (the power-cut test), test/kubeapiserver/kubelet/modules.sh
# for virtio_net's (the kubelet VM). Does nothing when every module named is
# there already; prints the directory.
#
# Usage: kernel-modules.sh WHO MODULE...   (WHO names the caller in errors)
set -euo pipefail
who=$1
shift
cache=/var/cache/clockwatch-test
[ -s "$cache/vmlinuz.package" ] || { echo "$who: no $cache/vmlinuz.package (run scripts/deps.d/40-vm.sh first)" >&2; exit 1; }
pkg=$(cat "$cache/vmlinuz.package")
dest=$cache/modules/$pkg
missing=
for m in "$@"; do [ -s "$dest/$m.ko" ] || missing=1; done
if [ -n "$missing" ]; then
	mkdir -p "$dest"
	work=$(mktemp -d "$cache/.fetch.XXXXXX")
	chmod 0755 "$work"
	chown _apt "$work" 2>/dev/null || true
	trap 'rm -rf "$work"' EXIT
	# 40-vm.sh keeps the package in $cache/debs; download it only when it is
	# not there (an older cache), and keep it for the next caller.
	debs=$cache/debs
	deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" 2>/dev/null | head -n1)
	if [ -z "$deb" ]; then
		if ! (cd "$work" && apt-get download -qq "$pkg"); then
			apt-get update -qq
			(cd "$work" && apt-get download -qq "$pkg") || { echo "$who: cannot download $pkg" >&2; exit 1; }
		fi
		mkdir -p "$debs"
		mv "$work"/"$pkg"_*.deb "$debs/"
		deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" | head -n1)
	fi
	patterns=()
	for m in "$@"; do patterns+=("./lib/modules/*/$m.ko"); done
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards "${patterns[@]}"
	for m in "$@"; do
		src=$(find "$work/lib/modules" -name "$m.ko" | head -n1)
		[ -n "$src" ] || { echo "$who: $m.ko not in $pkg" >&2; exit 1; }
		install -m 0644 "$src" "$dest/$m.ko.tmp"
		mv "$dest/$m.ko.tmp" "$dest/$m.ko"
	done
fi
echo "$dest"
