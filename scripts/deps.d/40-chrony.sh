#!/usr/bin/env bash
# ntpsec conflicts with chrony (both provide time-daemon), so its ntpd is
# unpacked for the ntpd mode 6 tests instead of installed: nothing starts it
# as a service and it never runs outside a test's own user and network
# namespace, where it cannot set this machine's clock.
set -euo pipefail
dest=/opt/clockwatch-test/ntpsec
if [ ! -x "$dest/usr/sbin/ntpd" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -qq ntpsec 2>/dev/null)
	mkdir -p "$dest"
	dpkg-deb -x "$tmp"/ntpsec_*.deb "$dest"
fi
