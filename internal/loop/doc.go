// Package loop is the polling loop every source poller runs: poll now, then
// on every tick, until the context ends.
package loop
