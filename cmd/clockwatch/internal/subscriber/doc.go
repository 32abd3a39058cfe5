// Package subscriber holds the logic of the `clockwatch watch` and
// `clockwatch drill` commands: each is a subscriber of a running
// clockwatch's stepdown socket (through the public client, package
// stepdown). The command files in cmd/clockwatch only parse flags and call
// Watch and Drill.
package subscriber
