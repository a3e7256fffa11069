//go:build !unix

package courierexec

// sweepOrphans does nothing here: on Windows the courier's job object ends
// with peerctl, and its folder is left to the system's temporary-file
// clean-up.
func sweepOrphans(string) {}
