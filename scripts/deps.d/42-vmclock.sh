#!/usr/bin/env bash
# test-deps: parallel (its own apt lists and cache; runs beside the other scripts)
# Fetches what test/vm's VMClock tests boot (issue 22): qemu 10, whose
# `-device vmclock` gives the guest a VMClock page, and Linux 7.3.4, whose
# ptp_vmclock driver maps it as /dev/vmclock0. Neither is in bookworm: qemu
# comes from bookworm-backports, the kernel from trixie-backports, each
# unpacked from its .deb (dpkg-deb -x) into the cache, never installed: the
# host's qemu 7.2 and apt sources stay as they are. The backports' package
# lists live in a private apt directory under the cache.
#
# The versions are pinned: a migration stream is only read by the same qemu,
# and the tests' expectations (the marker qemu bumps, the page's layout) were
# checked with these.
#
# test/vm looks for them under /var/cache/clockwatch-test/vmclock/
# (qemu-system-x86_64, vmlinuz, ptp_vmclock.ko), or under $CLOCKWATCH_TEST_VMCLOCK.
set -euo pipefail

QEMU_VERSION='1:10.0.2+ds-2+deb13u1~bpo12+1'
KERNEL=7.3.4+deb13-cloud-amd64

cache=/var/cache/clockwatch-test
dest=$cache/vmclock
[ -s "$dest/qemu-system-x86_64" ] && [ -s "$dest/vmlinuz" ] && [ -s "$dest/ptp_vmclock.ko" ] &&
	[ "$(cat "$dest/versions" 2>/dev/null)" = "qemu $QEMU_VERSION kernel $KERNEL" ] && exit 0

apt=$cache/apt-backports
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$dest"
cat >"$apt/sources.list" <<'EOF'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
EOF
A=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt")

work=$(mktemp -d "$cache/.fetch.XXXXXX")
# apt-get download fetches as the _apt user where it can.
chmod 0755 "$work"
chown _apt "$work" 2>/dev/null || true
trap 'rm -rf "$work"' EXIT

pkgs=("qemu-system-x86=$QEMU_VERSION" "linux-binary-$KERNEL" "linux-modules-$KERNEL")
# With stale private lists (or none yet), update them once and try again.
if ! (cd "$work" && apt-get "${A[@]}" download -qq "${pkgs[@]}" 2>/dev/null); then
	apt-get "${A[@]}" update -qq
	(cd "$work" && apt-get "${A[@]}" download -qq "${pkgs[@]}") ||
		{ echo "42-vmclock.sh: cannot download ${pkgs[*]} from the backports" >&2; exit 1; }
fi
for deb in "$work"/*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done
install -m 0755 "$work/root/usr/bin/qemu-system-x86_64" "$dest/qemu-system-x86_64.tmp"
install -m 0644 "$work/root/usr/lib/modules/$KERNEL/vmlinuz" "$dest/vmlinuz.tmp"
xz -dc "$work/root/usr/lib/modules/$KERNEL/kernel/drivers/ptp/ptp_vmclock.ko.xz" >"$dest/ptp_vmclock.ko.tmp"
for f in qemu-system-x86_64 vmlinuz ptp_vmclock.ko; do
	mv "$dest/$f.tmp" "$dest/$f"
done
# The binary runs with the host's libraries: fail here, not in a test, when
# one is missing (42-vmclock.pkgs lists those the host's qemu does not bring).
if ldd "$dest/qemu-system-x86_64" | grep -q 'not found'; then
	echo "42-vmclock.sh: qemu 10 lacks libraries:" >&2
	ldd "$dest/qemu-system-x86_64" | grep 'not found' >&2
	exit 1
fi
printf 'qemu %s kernel %s\n' "$QEMU_VERSION" "$KERNEL" >"$dest/versions"
echo "42-vmclock.sh: qemu $QEMU_VERSION, Linux $KERNEL and ptp_vmclock.ko in $dest"
