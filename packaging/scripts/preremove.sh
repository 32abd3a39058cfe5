#!/bin/sh
# clockwatch pre-removal script, for both the .deb (prerm: "remove", or
# "upgrade" new-version) and the .rpm (%preun: 0 on erase, 1 on upgrade).
# On removal it stops and disables the service and its socket where systemd
# runs; on upgrade it leaves the daemon running for postinstall to restart.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now clockwatch.service clockwatch.socket || true
	fi
	;;
esac
exit 0
