package app

import "time"

// WithClock makes the Service read the time from now (tests only).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }
