// Package throwawayroot runs a test's changes to the system (installing and
// purging a package, adding users) in a copy-on-write copy of the host's
// root filesystem that vanishes with the process, so the host is left as it
// was.
//
// The copy is an overlay of / with an upper directory on a tmpfs, mounted in
// a private mount namespace and entered with chroot. The namespace belongs to
// one child process (see Command); when it exits the kernel drops the
// namespace and every mount in it, the tmpfs with all the writes included.
// Nothing is mounted or unmounted in the host's namespace.
//
// Only the root filesystem is copied. Other filesystems mounted on the host
// show as the root filesystem's (usually empty) directories under them,
// except /proc, /dev and /sys (read-only), which are bound in: on a host
// whose /usr or /var is a filesystem of its own, the package test fails
// there instead of writing to it.
//
// Snapshot records the host's state a test must not change (dpkg's status,
// the user databases, clockwatch's directories) so the test can prove, after
// the child exited, that it did not.
package throwawayroot
