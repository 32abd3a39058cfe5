#!/bin/sh
# clockwatch post-removal script, for both the .deb (postrm: "remove",
# "purge", "upgrade", ...) and the .rpm (%postun: 0 on erase, 1 on upgrade).
# It makes systemd forget the removed units; on the .deb, deb-systemd-helper
# masks the unit on remove and forgets its enablement on purge (as
# dh_installsystemd's snippet does), and a purge deletes the state and
# runtime directories. Both keep the clockwatch system user and group, as
# Debian's and Fedora's packages do: files it owned may remain (logs,
# backups), and a uid reused by another user would own them.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	if [ "$1" = remove ] && command -v deb-systemd-helper >/dev/null 2>&1; then
		deb-systemd-helper mask clockwatch.service >/dev/null || true
	fi
	;;
purge)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	if command -v deb-systemd-helper >/dev/null 2>&1; then
		deb-systemd-helper purge clockwatch.service >/dev/null || true
		deb-systemd-helper unmask clockwatch.service >/dev/null || true
	fi
	rm -rf /var/lib/clockwatch /run/clockwatch
	;;
esac
exit 0
