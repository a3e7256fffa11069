package app

import "time"

// WithClock makes the Service read the time from now (tests only).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithTimer makes the Service's watch arm its timers with after (tests
// only): a test fires the grace of a missing record when it chooses.
func WithTimer(after func(time.Duration) <-chan time.Time) Option {
	return func(s *Service) { s.after = after }
}
