//go:build !linux

package transporttest

import "testing"

// OtherListener: see impostor_linux.go; off Linux a test that needs one skips.
type OtherListener struct {
	Addr     string
	PID, UID int
}

// ListenAsOther skips the test: no other user's process can be started
// here.
func ListenAsOther(t testing.TB, addr string) *OtherListener {
	t.Skip("an impostor of another user needs Linux (its /proc tables)")
	return nil
}

// Received is nothing.
func (im *OtherListener) Received() []string { return nil }
