package fswatch

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/ports"
)

// Exits watches processes end. The zero value uses a pidfd where the
// kernel offers one and polls every DefaultPoll otherwise.
type Exits struct {
	// Poll is the fallback interval (0: DefaultPoll).
	Poll time.Duration
	// NoPidfd forces the polling fallback (tests).
	NoPidfd bool
	// ProcRoot is where /proc is (default "/proc"; tests).
	ProcRoot string
}

var _ ports.ExitWatcher = (*Exits)(nil)

// NewExits returns an Exits using pidfds where possible.
func NewExits() *Exits { return &Exits{} }

func (x *Exits) poll() time.Duration {
	if x.Poll > 0 {
		return x.Poll
	}
	return DefaultPoll
}

func (x *Exits) procRoot() string {
	if x.ProcRoot != "" {
		return x.ProcRoot
	}
	return "/proc"
}

// Exited implements ports.ExitWatcher. On Linux it opens a pidfd for pid,
// then checks that the pid still started at procStart (a pid reused before
// the pidfd was opened counts as ended), then waits in poll(2) on the pidfd
// and on a pipe that ctx's end writes to: nothing polls the process. Where
// pidfd_open fails (kernel before 5.3, seccomp, another OS) it checks
// kill(pid, 0) and the start time every Poll.
func (x *Exits) Exited(ctx context.Context, pid int, procStart string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		if x.wait(ctx, pid, procStart) {
			close(ch)
		}
	}()
	return ch
}

// wait returns true when the process ended, false when ctx ended first.
func (x *Exits) wait(ctx context.Context, pid int, procStart string) bool {
	if pid <= 0 {
		return true
	}
	if !x.NoPidfd {
		fd, err := pidfdOpen(pid)
		switch {
		case err == nil:
			defer unix.Close(fd)
			if x.ended(pid, procStart) {
				return true
			}
			ended, err := waitFD(ctx, fd)
			if err == nil {
				return ended
			}
			// poll failed: fall through to polling.
		case errors.Is(err, unix.ESRCH):
			return true
		}
	}
	t := time.NewTicker(x.poll())
	defer t.Stop()
	for {
		if x.ended(pid, procStart) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// ended reports whether pid is gone, or alive with another start time.
func (x *Exits) ended(pid int, procStart string) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return true
	}
	if procStart == "" {
		return false
	}
	start, err := procliveness.StartTime(x.procRoot(), pid)
	if err != nil {
		// Gone between the two checks, or no /proc: only the former ends it.
		return errors.Is(err, fs.ErrNotExist) && unix.Kill(pid, 0) != nil
	}
	return start != procStart
}
