//go:build !unix

package opencode

// owner is unknown off unix: no /proc to read, so no process is found.
func owner(string) int { return -1 }

func getuid() int { return -2 }
