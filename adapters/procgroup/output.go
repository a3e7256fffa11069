package procgroup

import (
	"bytes"
	"sync"
)

// Output is a process's output kept up to Max bytes; the rest is
// discarded, while each write still reports complete, so the process never
// blocks on a full pipe and a flood cannot fill memory. It is safe for
// concurrent use.
type Output struct {
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if room := o.Max - o.buf.Len(); room > 0 {
		o.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (o *Output) Bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Clone(o.buf.Bytes())
}
