//go:build !unix

package opencode

// getuid off unix: no /proc to read, so no process is found (no uid owns
// one: sockowner.OwnerUID is -1 there).
func getuid() int { return -2 }
