package domain

// Health is one doctor check's result; a closed set.
type Health int

// Health values. Only HealthFail makes peerctl unusable.
const (
	HealthOK Health = iota
	// HealthWarn: usable, but something deserves a look.
	HealthWarn
	// HealthFail: peerctl cannot work as configured.
	HealthFail
	// HealthSkip: nothing to check (e.g. no live session has a socket).
	HealthSkip
)

// String returns "ok", "warn", "fail" or "skip".
func (h Health) String() string {
	switch h {
	case HealthOK:
		return "ok"
	case HealthWarn:
		return "warn"
	case HealthFail:
		return "fail"
	default:
		return "skip"
	}
}

// MarshalText writes the word, so JSON shows "ok" rather than 0.
func (h Health) MarshalText() ([]byte, error) { return []byte(h.String()), nil }
