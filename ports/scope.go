package ports

import (
	"context"
	"sync"
)

// A read scope is what one read of every harness's registry shares: a
// value that several registries need (one pass over the process table,
// say) is built once per read by the first that asks, and the next read
// builds it afresh. The app opens a scope around each read of its
// registries (WithReadScope); a registry asks for a shared value with
// Scoped, and gets one of its own when no scope is open.
type readScope struct {
	mu   sync.Mutex
	vals map[any]any
}

type scopeKey struct{}

// WithReadScope returns ctx carrying a new, empty read scope.
func WithReadScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, &readScope{vals: map[any]any{}})
}

// Scoped returns the value of key in ctx's read scope, built with build on
// the first ask (build runs with the scope locked, so once per scope); with
// no scope open, build's value, not kept. key is comparable, and of a type
// of the asking package so that no other package's key can equal it.
func Scoped[T any](ctx context.Context, key any, build func() T) T {
	s, ok := ctx.Value(scopeKey{}).(*readScope)
	if !ok {
		return build()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.vals[key].(T); ok {
		return v
	}
	v := build()
	s.vals[key] = v
	return v
}
