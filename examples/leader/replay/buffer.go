package replay

import (
	"bytes"
	"sync"
)

// bytesBuffer is a bytes.Buffer safe for a writer and a reader in different
// goroutines.
type bytesBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *bytesBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *bytesBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
