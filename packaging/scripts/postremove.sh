#!/bin/sh
# clockwatch post-removal script, for both the .deb (postrm: "remove",
# "purge", "upgrade", ...) and the .rpm (%postun: 0 on erase, 1 on upgrade).
# It makes systemd forget the removed units, and on a Debian purge deletes
# what the package and the daemon created: the state directory, the runtime
# directory and the clockwatch user and group. The RPM convention is to keep
# system users, so an erase keeps it.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	;;
purge)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	rm -rf /var/lib/clockwatch /run/clockwatch
	if getent passwd clockwatch >/dev/null; then
		userdel clockwatch || echo "clockwatch: could not remove the clockwatch user" >&2
	fi
	if getent group clockwatch >/dev/null; then
		groupdel clockwatch || echo "clockwatch: could not remove the clockwatch group" >&2
	fi
	;;
esac
exit 0
