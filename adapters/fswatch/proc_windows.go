package fswatch

import (
	"errors"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

// errNoSuchProcess is never returned on Windows: there are no pidfds.
var errNoSuchProcess = errors.New("no such process")

// processGone reports whether no process runs as pid.
func processGone(pid int) bool { return procliveness.ProcessGone(pid) }

// processUnanswered is processGone: Windows has no EPERM-style middle.
func processUnanswered(pid int) bool { return procliveness.ProcessGone(pid) }
