// Package golangci makes the wallclock analyzer a golangci-lint module plugin
// named "clockwatch" (docs/audit.md shows the .custom-gcl.yml and the
// .golangci.yml that load it).
//
// golangci-lint finds module plugins through register.Plugin, called from an
// init function of the plugin's package: that registry is golangci-lint's
// contract, so this package is the one place of clockwatch with an init().
package golangci
