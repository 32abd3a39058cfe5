// Package safefile opens clockwatch's state and runtime files (the step
// journal, stepdown.json, the stepdown socket's lock file, the clockbound
// segment, its lock and its directory) as what they must be: regular files
// and directories, never followed through a symbolic link, never a FIFO or
// a device that blocks the open or the first read. A prepared state
// directory made clockwatch hang before its first log line (a FIFO as
// state.json), truncate another file (events.jsonl as a link) or create
// files elsewhere (a dangling lock-file link).
package safefile
