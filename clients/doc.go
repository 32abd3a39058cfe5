// Package clients holds the client libraries applications use to hear
// clockwatch's stepdown socket: python/ (a pip-installable package) and
// java/ (a jar built with javac). It has no Go code: its tests build
// clockwatch, start the real daemon, install each client the way its users
// install packages (pip into a fresh virtual environment, offline; javac and
// jar) and run the client's own test suite and README example against the
// daemon, with drills. The Go client is package stepdown.
package clients
