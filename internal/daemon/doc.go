// Package daemon assembles clockwatch's long-running parts (the HTTP
// exporter, the configuration reloader and, as they are added, the clock
// sampler, the clock-set watcher, the time daemon pollers and the stepdown
// server) and runs each as a task under one errgroup: the first to fail
// stops the others, and cancelling the context stops them all.
package daemon
