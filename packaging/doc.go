// Package packaging holds what turns clockwatch into .deb and .rpm packages
// (nfpm.yaml, the maintainer scripts, the default configuration
// clockwatch.yml) and the tests that install them the way a user does.
//
// The install test installs, upgrades and purges the .deb with dpkg, in a
// throwaway copy of the machine's root (internal/throwawayroot: an overlay of
// / in a private mount namespace), never on the machine itself, and checks
// afterwards that the host's dpkg status, users and groups, /etc/clockwatch,
// /var/lib/clockwatch and /run/clockwatch are as they were. It builds the
// packages, which is slow, so it only runs when CLOCKWATCH_PACKAGE_TEST=1, as
// root; `make test` sets the variable.
package packaging
