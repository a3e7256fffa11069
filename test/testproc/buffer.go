package testproc

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe to read while a process (or a goroutine)
// writes to it, e.g. a command's stderr read while it runs.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
