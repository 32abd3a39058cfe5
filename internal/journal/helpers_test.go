package journal

import "github.com/clockwatch/clockwatch/internal/step"

// Append is AppendThen without a durable callback, for the tests (the
// daemon always announces through it).
func (j *Journal) Append(e step.Event) error { return j.AppendThen(e, nil) }
