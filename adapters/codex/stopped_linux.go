//go:build linux

package codex

import "github.com/peerctl/peerctl/adapters/procliveness"

// stoppedState reports the state letter of a stopped process ('T' or 't'
// in /proc/<pid>/stat, proc(5)) and whether pid is stopped.
func stoppedState(procRoot string, pid int) (byte, bool) {
	if pid <= 0 {
		return 0, false
	}
	st, err := procliveness.ReadStat(procRoot, pid)
	if err != nil || (st.State != 'T' && st.State != 't') {
		return 0, false
	}
	return st.State, true
}
