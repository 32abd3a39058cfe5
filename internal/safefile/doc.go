// Package safefile is the one way clockwatch opens a file it reads or keeps:
// the configuration, the Kubernetes token, kubeconfig and the files it names,
// the VMClock device, and the state and runtime files (the step journal,
// stepdown.json, the stepdown socket's lock file, the clockbound segment, its
// lock and its directory). Each is opened as what it must be: never blocking
// (O_NONBLOCK, so that a FIFO is refused instead of waited on), a regular file
// (or a character device where one is expected), no larger than a limit, and
// following only the links that have a use (Links). A prepared file made
// clockwatch hang before its first log line (a FIFO as state.json or as the
// token), grow to gigabytes (a link to /dev/zero) or send another file's
// content as a bearer token.
package safefile
