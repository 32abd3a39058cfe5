// Package policy decides, from what clockwatch observes, whether local
// applications may trust the clock: the state machine behind the stepdown
// socket. It is a pure function of its inputs: every method takes the
// CLOCK_MONOTONIC time of the observation, and nothing here reads a clock,
// sleeps or starts a goroutine, so the tests are tables of inputs.
//
// Its time-source inputs are normalised readings (package timesource), one
// per source: it imports no source package, and judges offset, error bound,
// synchronisation and loss per source, naming the source in each event.
//
// Triggers (each with a threshold, each can be disabled): a wall-clock step
// larger than a threshold, a source's |offset| over a threshold, a time
// source reporting unsynchronised for longer than a grace period (the kernel,
// a fallback, only while no authoritative source answers), an error bound
// over a threshold, and a source or probe failing for longer than a grace
// period. Any trigger moves the state to stepdown; the state goes back to ok
// once no condition has held for the hold-down period and every polled
// source has reported since. The state is unknown until every awaited source
// has given its first reading. A drill is a stepdown that resumes after its
// own hold time, unless a real trigger fires meanwhile. Persisted and
// Restore carry the state across a restart in the same boot.
//
// # The trigger table
//
// Every reason is one row of the table in reasons.go (TriggerTable): its
// kind (instant, level, graced), its key under stepdown.triggers, its
// default, whether it is judged per source, whether it disrupts the
// bounded-time segment, the text of its condition, and what raises it: a
// level row with a threshold names the figure of a reading it compares
// (Reading judges every such row through Level), a graced row that any
// source's reading raises names its verdict. Validation, defaults, reloads,
// grace periods, the events' text and the segment's judge (Disrupts) read
// the row, and its setting is the field of Triggers (and SourceTriggers when
// per source) whose YAML key is the row's Key. The tests check the table
// against the wire's list and constants (stepdown.TriggerReasons,
// stepdown/wire.go), the keys of Triggers and SourceTriggers, and the lines
// of docs/configuration.md and docs/stepdown-protocol.md, so a reason left
// out of one fails them.
//
// A new reason needs: its constant and list entry in stepdown/wire.go (the
// client module), its row here, its field in Triggers (and SourceTriggers
// when per source), and its line in docs/stepdown-protocol.md,
// docs/configuration.md, packaging/clockwatch.yml and the /metrics goldens
// that list every reason. An instant reason, or one whose input is not a
// reading (a wake-up, a step), needs its input besides: a method like Woke,
// fed by the daemon.
//
// Files: policy.go (the state machine and its inputs), triggers.go (the
// configuration), reasons.go (the table), judges.go (the level, graced and
// instant judges the table drives), step.go (a step and how it was seen),
// deadline.go (grace periods and the next deadline), persist.go (the state
// across restarts).
package policy
