package procliveness

import (
	"fmt"

	"github.com/peerctl/peerctl/domain"
)

// Windows error codes and the exit code of a running process (winerror.h;
// GetExitCodeProcess). Plain numbers, so the rules are tested on any OS.
const (
	win32ErrorAccessDenied     = 5
	win32ErrorInvalidParameter = 87
	win32StillActive           = 259
)

// Win32Alive reads what OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION) and
// GetExitCodeProcess said about pid, as libuv's kill(pid, 0) (which
// Claude Code's process.kill(pid, 0) runs on) reads it: openErr 0 means
// opened; ERROR_INVALID_PARAMETER is no such process (No);
// ERROR_ACCESS_DENIED is a process we may not open (Yes, like EPERM); an
// opened process is alive while its exit code is STILL_ACTIVE (259) and has
// exited otherwise (No: only a handle someone holds keeps it).
func Win32Alive(pid int, openErr, exitCode uint32) (domain.Tri, string) {
	switch openErr {
	case 0:
		if exitCode == win32StillActive {
			return domain.Yes, ""
		}
		return domain.No, ""
	case win32ErrorInvalidParameter:
		return domain.No, ""
	case win32ErrorAccessDenied:
		return domain.Yes, ""
	}
	return domain.Unknown, fmt.Sprintf("OpenProcess(%d): Windows error %d", pid, openErr)
}
