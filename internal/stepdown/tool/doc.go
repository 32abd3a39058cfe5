// Package tool holds the logic of the `clockwatch watch` and `clockwatch
// drill` commands, which talk to a running clockwatch over the stepdown
// socket. The command files in cmd/clockwatch only parse flags and call
// Watch and Drill.
package tool
