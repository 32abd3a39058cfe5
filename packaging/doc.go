// Package packaging holds what turns clockwatch into .deb and .rpm packages
// (nfpm.yaml, the maintainer scripts, the default configuration
// clockwatch.yml) and the tests that install them the way a user does.
//
// The install test changes the machine it runs on (it installs, upgrades and
// purges the .deb with dpkg), so it only runs when CLOCKWATCH_PACKAGE_TEST=1,
// as root; `make test` sets the variable. It cleans up after itself, failed
// or not, and refuses to run where clockwatch is already installed.
package packaging
