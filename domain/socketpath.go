package domain

import (
	"fmt"
	"runtime"
)

// MaxSocketPathFor returns the longest path, in bytes without the
// terminating NUL, that a Unix socket address holds on goos: 107 on Linux
// (sun_path is 108 bytes, unix(7)), 103 on macOS and the BSDs (sun_path is
// 104 bytes), and 0 on Windows and elsewhere, where Claude Code's inbox is
// not a Unix socket (a named pipe on Windows) and no limit applies.
func MaxSocketPathFor(goos string) int {
	switch goos {
	case "linux", "android":
		return 107
	case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly":
		return 103
	}
	return 0
}

// MaxSocketPath is MaxSocketPathFor this platform. A longer path cannot be
// connected to at all; it is never truncated (a truncated path names
// another file).
var MaxSocketPath = MaxSocketPathFor(runtime.GOOS)

// SocketPathTooLong says why path cannot be a Unix socket address on this
// platform ("" when it fits): the one place the platform's limit is
// applied, for the listing's addressable flag and the socket transport.
func SocketPathTooLong(path string) string { return SocketPathTooLongOn(runtime.GOOS, path) }

// SocketPathTooLongOn is SocketPathTooLong for goos ("" where goos has no
// Unix socket limit, MaxSocketPathFor 0).
func SocketPathTooLongOn(goos, path string) string {
	max := MaxSocketPathFor(goos)
	if max == 0 || len(path) <= max {
		return ""
	}
	return fmt.Sprintf("socket path is %d bytes, longer than a Unix socket address holds (%d)", len(path), max)
}
