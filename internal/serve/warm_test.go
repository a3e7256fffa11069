package serve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each distinct set of settings has its own warm couriers (a running
// Claude Code each): the service keeps a set while a send uses it, then at
// most maxIdleWarm unused ones (the most recently used) and none unused
// for longer than warmIdle. Before, every distinct environment (a shell
// with another HOME, say) left a courier running until the service ended.
func TestServiceKeepsFewIdleWarmCouriers(t *testing.T) {
	s := newServer(context.Background(), Options{})
	t0 := time.Now()
	s.warmFor("in use")
	for i := range maxIdleWarm + 3 {
		key := fmt.Sprint("key ", i)
		w, _ := s.warmFor(key)
		w2, _ := s.warmFor(key)
		require.Same(t, w, w2, "one set per key")
		s.letGo(key, t0.Add(time.Duration(i)*time.Second))
		s.letGo(key, t0.Add(time.Duration(i)*time.Second))
	}
	var kept []string
	for k := range s.warm {
		kept = append(kept, k)
	}
	want := []string{"in use"}
	for i := 3; i < maxIdleWarm+3; i++ {
		want = append(want, fmt.Sprint("key ", i))
	}
	assert.ElementsMatch(t, want, kept, "the set in use and the newest idle ones")

	// key i was let go at t0+i s: at t0+warmIdle+5 s, keys below 5 have
	// been idle for longer than warmIdle.
	s.trimWarm(t0.Add(warmIdle + 5*time.Second))
	kept = kept[:0]
	for k := range s.warm {
		kept = append(kept, k)
	}
	assert.ElementsMatch(t, []string{"in use", "key 5", "key 6"}, kept, "idle longer than warmIdle: closed")
	s.letGo("in use", t0.Add(warmIdle+5*time.Second))
	assert.Contains(t, s.warm, "in use", "just let go: kept")
}
