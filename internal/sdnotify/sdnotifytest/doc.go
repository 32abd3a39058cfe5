// Package sdnotifytest is a fake systemd notification socket for tests: it
// listens where $NOTIFY_SOCKET would point and hands the test every datagram
// the code under test sends.
package sdnotifytest
