//go:build !linux

package codex

// stoppedState: only Linux's /proc says whether a process is stopped;
// elsewhere nothing is claimed.
func stoppedState(string, int) (byte, bool) { return 0, false }
