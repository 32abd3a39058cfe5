#!/bin/sh
# clockwatch post-installation script, for both the .deb (postinst:
# "configure" [previous version]) and the .rpm (%post: 1 on install, 2 on
# upgrade). It creates the clockwatch system user and group, on the first
# install adds the user to chrony's group so the daemon can read chronyd's
# command socket, applies the udev rule for /dev/vmclock0, and enables the
# service. On the .deb, deb-systemd-helper enables it as dh_installsystemd
# does, with or without systemd running (a .deb installed while building a
# machine image boots enabled) and remembers an administrator's disable
# across upgrades; on the rpm, the system's preset policy decides (systemctl
# preset, as %systemd_post does). The service is started or restarted only
# where systemd runs and, on Debian, policy-rc.d allows it.
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

# /dev/vmclock0, the hypervisor's VMClock page (when ptp_vmclock is loaded):
# the packaged udev rule, 60-clockwatch-vmclock.rules, gives it to group
# clockwatch, mode 0640. A device that exists already gets it now: udev
# reloads its rules (they name the group created above) and replays the
# device's event. Only where udev runs: in a chroot or an image build,
# udevadm would reach the host's devices. Never fails the install.
if [ -d /run/udev ] && command -v udevadm >/dev/null 2>&1; then
	udevadm control --reload >/dev/null 2>&1 || true
	udevadm trigger --action=change --subsystem-match=misc --sysname-match='vmclock[0-9]*' >/dev/null 2>&1 || true
	udevadm settle --timeout=10 >/dev/null 2>&1 || true
fi

# chronyd's command socket is readable by chrony's group: _chrony on Debian
# and Ubuntu, chrony on the RHEL family and SUSE. The unit does not name the
# group (SupplementaryGroups= with a group that does not exist would fail the
# start); systemd's initgroups() picks up the membership granted here. If
# chrony is installed later: usermod -a -G _chrony clockwatch, then restart.
# Granted on the first install only: an administrator who removed clockwatch
# from the group meant it, and an upgrade must not add it back.
if [ "$first" = 1 ]; then
	for group in _chrony chrony; do
		if getent group "$group" >/dev/null; then
			if ! id -nG clockwatch | tr ' ' '\n' | grep -qx "$group"; then
				usermod -a -G "$group" clockwatch
			fi
		fi
	done
fi

# The .deb: enabled as dh_installsystemd's snippet does it. was-enabled is
# true for a unit deb-systemd-helper has never seen (a first install), so
# that enables; after an administrator's `systemctl disable` it is false and
# update-state only records the unit's current links.
if [ "$rpm" = 0 ] && command -v deb-systemd-helper >/dev/null 2>&1; then
	deb-systemd-helper unmask "$unit" >/dev/null || true
	if deb-systemd-helper --quiet was-enabled "$unit"; then
		deb-systemd-helper enable "$unit" >/dev/null || true
	else
		deb-systemd-helper update-state "$unit" >/dev/null || true
	fi
fi

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
		elif ! command -v deb-systemd-helper >/dev/null 2>&1; then
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
