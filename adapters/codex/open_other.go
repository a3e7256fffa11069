//go:build !unix

package codex

// openFlags: none on this platform.
const openFlags = 0
