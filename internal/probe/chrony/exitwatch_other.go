//go:build !linux

package chrony

import "errors"

// exitWatch is not available off Linux: the poller polls every
// max_poll_interval.
type exitWatch struct{ pid int }

func watchExit(string, func()) (*exitWatch, error) {
	return nil, errors.New("watching chronyd's exit needs Linux's pidfd")
}

func (w *exitWatch) Done() <-chan struct{} { return nil }

func (w *exitWatch) Close() {}
