package vmclock

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrTruncated: the file under the mapping is shorter than the page read
// from it (truncated while mapped).
var ErrTruncated = errors.New("VMClock page truncated under its mapping")

// ReadMapped is ReadMemory made safe for a mapping whose file may shrink: a
// load from a mapped page past the file's end raises SIGBUS, which the Go
// runtime turns into a fatal "unexpected fault address" unless the faulting
// goroutine asked for a panic instead. ReadMapped asks for one around the
// read (debug.SetPanicOnFault applies to the calling goroutine only, so no
// other code is affected and nothing needs LockOSThread) and recovers it as
// ErrTruncated.
func ReadMapped(mem []byte) (p Page, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(interface{ Addr() uintptr }); ok {
				p, err = Page{}, fmt.Errorf("the mapped page faulted at %#x (the file was truncated while mapped): %w", f.Addr(), ErrTruncated)
				return
			}
			panic(r)
		}
	}()
	return ReadMemory(mem)
}
