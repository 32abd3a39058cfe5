//go:build !linux

package ktimer

import "errors"

func newKernelTimer(func()) (kernelTimer, error) {
	return nil, errors.New("no timerfd on this system")
}
