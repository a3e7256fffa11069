//go:build linux || darwin

package procgroup

// OnStarted sets a function called right after each command has started.
func OnStarted(f func(pid int)) { started = f }

// PauseGuard makes each guard wait d before it says it is ready.
func PauseGuard(d string) { guardPause = "sleep " + d + "; " }
