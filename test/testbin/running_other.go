//go:build !linux

package testbin

// proc is one running process.
type proc struct {
	pid, ppid int
	args      string
	// tests names the tests whose temporary folders its working folder
	// and environment name (which test started it).
	tests string
}

// running finds nothing where /proc does not name each process's
// executable.
func running(string) []proc { return nil }

func (proc) kill() {}
