package opencode

import (
	"os"
	"runtime"
)

// thisOS is the system the registry and doctor are built for: opencode
// processes are found through /proc, which Linux alone has.
const thisOS = runtime.GOOS

// unsupported says, for a person, why no opencode process can be found on
// goos ("" on Linux, where /proc shows each one's program, command line,
// folder, environment and listening sockets). macOS and Windows builds
// compile and serve the rest (endpoints, the prompt transport to a known
// address) but list no opencode session: their equivalents (sysctl and
// libproc; the Toolhelp and TCP-table APIs) are not written yet, and no
// opencode was run there (docs/OPENCODE.md).
func unsupported(goos string) string {
	if goos == "linux" {
		return ""
	}
	return "discovery of opencode processes is not supported on " + goos + " yet (peerctl finds them through /proc): no opencode session is listed"
}

// used reports whether opencode has run for this user: its database
// exists. On a system where discovery is not supported, that makes the
// gap worth a warning rather than a skipped check.
func used(db string) bool {
	if db == "" {
		return false
	}
	_, err := os.Stat(db)
	return err == nil
}
