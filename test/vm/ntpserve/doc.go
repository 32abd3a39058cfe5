// Command ntpserve is a minimal NTP server for clockwatch's test VM: it
// answers NTP client requests on a UDP address with a time that follows the
// guest's CLOCK_MONOTONIC from the wall clock it read at its start, plus an
// offset it reads from a file at every request. So a chronyd in the guest
// can be told "your clock is 12.4 s ahead" and step the guest's clock, and
// after the step the server's time does not move with it (a server serving
// the stepped clock would make chronyd step again and again).
//
//	ntpserve -addr 127.0.0.1:11123 -offset-file /tmp/ntp.offset
//
// The offset file holds a Go duration (-12.4s); missing or empty means 0.
package main
