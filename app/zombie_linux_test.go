package app_test

import (
	"testing"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

// isZombie reports whether pid has exited and waits to be reaped (/proc
// state 'Z').
func isZombie(_ testing.TB, pid int) bool {
	st, err := procliveness.ReadStat("/proc", pid)
	return err == nil && st.State == 'Z'
}
