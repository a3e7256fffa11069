//go:build !unix

package transporttest

import "testing"

// OtherListener: see impostor_unix.go; off Unix a test that needs one skips.
type OtherListener struct {
	Addr     string
	PID, UID int
}

// ListenAsOther skips the test: no other user's process can be started
// here.
func ListenAsOther(t testing.TB, addr string) *OtherListener {
	t.Skip("an impostor of another user needs a Unix system")
	return nil
}

// Received is nothing.
func (im *OtherListener) Received() []string { return nil }
