// Package peers is the fleet's clock: clockwatch agents measure each other's
// clocks with NTP-format timestamp exchanges over UDP, and each judges
// itself against the majority of the peers it measured (docs/peers.md).
package peers
