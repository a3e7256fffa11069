package domain

import "fmt"

// MaxSocketPath is the longest path, in bytes, a Unix socket address holds
// on this platform: Linux's sun_path is 108 bytes including the terminating
// NUL (unix(7)), so 107. A longer path cannot be connected to at all; it is
// never truncated.
const MaxSocketPath = 107

// SocketPathTooLong says why path cannot be a Unix socket address on this
// platform ("" when it fits): the one place the platform's limit is
// applied, for the listing's addressable flag and the socket transport.
func SocketPathTooLong(path string) string {
	if len(path) <= MaxSocketPath {
		return ""
	}
	return fmt.Sprintf("socket path is %d bytes, longer than a Unix socket address holds (%d)", len(path), MaxSocketPath)
}
