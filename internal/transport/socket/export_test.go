package socket

// FanOutThroughGoroutine sends every announcement's writes to the clients
// beyond the privileged through the fan-out goroutine, calling hook before
// each of its slices; it must be called before Run.
func FanOutThroughGoroutine(s *Server, hook func()) {
	s.fanInLine = 0
	s.fanSliceHook = hook
}
