//go:build !linux && !darwin

package fleet

// bootID is "" where this build reads no boot id: the owner is the host
// name and the state folder's path, device and inode only.
func bootID() string { return "" }
