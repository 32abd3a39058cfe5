// Package ambiguousoff is ordering's ambiguous case, checked with the
// category turned off.
package ambiguousoff

import "time"

type lease struct {
	renewedAt, expiresAt int64
}

func (l *lease) renew(ttl int64) {
	l.renewedAt = time.Now().Unix()
	l.expiresAt = l.renewedAt + ttl
}

func (l *lease) stale() bool {
	return l.renewedAt >= l.expiresAt
}

func (l *lease) check() bool {
	return time.Now().Unix() > l.expiresAt // want `compares wall-clock readings`
}
