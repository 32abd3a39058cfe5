// Package ntptest is a tiny NTP server for tests: it answers NTPv3/v4 client
// requests on a loopback UDP port with this machine's time plus an offset
// that the test changes while the server runs, so that a real chronyd (or
// clockwatch's own SNTP probe) can be made to see a clock that is ahead or
// behind without anything touching the machine's clock.
package ntptest
