// Package chronydtest starts a real chronyd for integration tests, safely:
// always with -x (chronyd never touches this machine's clock), on loopback
// only, with its command socket in the test's temporary directory, and
// synchronised to NTP servers from package ntptest whose offset the test
// controls. Tests that use it are skipped without chronyd (failed under CI).
package chronydtest
