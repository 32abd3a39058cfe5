#!/bin/sh
# clockwatch post-installation script, for both the .deb (postinst:
# "configure" [previous version]) and the .rpm (%post: 1 on install, 2 on
# upgrade). It creates the clockwatch system user and group, adds the user to
# chrony's group so the daemon can read chronyd's command socket, and, only
# where systemd is running, enables and starts the service on first install
# or restarts it on upgrade. On the rpm, "enables" follows the system's preset
# policy (systemctl preset, as %systemd_post does): a distribution or image
# whose presets disable clockwatch gets it installed, neither enabled nor
# started. Debian enables new services (its presets enable everything).
set -e

unit=clockwatch.service

rpm=0
case "$1" in
configure) if [ -z "$2" ]; then first=1; else first=0; fi ;;
1) first=1 rpm=1 ;;
[0-9]*) first=0 rpm=1 ;;
abort-upgrade | abort-remove | abort-deconfigure) exit 0 ;;
*) first=0 ;;
esac

# The system user and group. The home directory is the state directory
# systemd creates (StateDirectory=clockwatch); nobody logs in as clockwatch.
if ! getent group clockwatch >/dev/null; then
	groupadd --system clockwatch
fi
if ! getent passwd clockwatch >/dev/null; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	[ -x "$nologin" ] || nologin=/bin/false
	useradd --system --gid clockwatch --home-dir /var/lib/clockwatch --no-create-home \
		--shell "$nologin" --comment "clockwatch clock health daemon" clockwatch
fi

# chronyd's command socket is readable by chrony's group: _chrony on Debian
# and Ubuntu, chrony on the RHEL family and SUSE. The unit does not name the
# group (SupplementaryGroups= with a group that does not exist would fail the
# start); systemd's initgroups() picks up the membership granted here. If
# chrony is installed later: usermod -a -G _chrony clockwatch, then restart.
for group in _chrony chrony; do
	if getent group "$group" >/dev/null; then
		if ! id -nG clockwatch | tr ' ' '\n' | grep -qx "$group"; then
			usermod -a -G "$group" clockwatch
		fi
	fi
done

# Services are only touched where systemd runs (not in containers, chroots or
# image builds), and, on Debian, only if policy-rc.d allows it.
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	allowed=1
	if [ -x /usr/sbin/policy-rc.d ]; then
		rc=0
		/usr/sbin/policy-rc.d "$unit" start >/dev/null 2>&1 || rc=$?
		case "$rc" in 0 | 104) ;; *) allowed=0 ;; esac
	fi
	if [ "$first" = 1 ]; then
		if [ "$rpm" = 1 ]; then
			systemctl preset "$unit" || true
			systemctl is-enabled --quiet "$unit" || allowed=0
		else
			systemctl enable "$unit" || true
		fi
		if [ "$allowed" = 1 ]; then
			systemctl start "$unit" ||
				echo "clockwatch: the service did not start; see: journalctl -u $unit" >&2
		fi
	elif [ "$allowed" = 1 ]; then
		systemctl try-restart "$unit" ||
			echo "clockwatch: the service did not restart; see: journalctl -u $unit" >&2
	fi
fi
exit 0
