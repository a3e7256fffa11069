package fswatch

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/ports"
)

// Exits watches processes end. The zero value uses a pidfd where the
// kernel offers one and polls every DefaultPoll otherwise. It must not be
// copied after first use.
type Exits struct {
	// Poll is the fallback interval (0: DefaultPoll).
	Poll time.Duration
	// NoPidfd forces the polling fallback (tests).
	NoPidfd bool
	// ProcRoot is where /proc is (default "/proc"; tests).
	ProcRoot string

	//lint:ignore U1000 the shared epoll set of the pidfds: Linux only, empty elsewhere
	pidfdSetMu
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
// the pidfd was opened counts as ended), then adds the pidfd to the one
// epoll set of x: one goroutine (one thread) waits for every watched
// process, holding one descriptor per process plus two; nothing polls the
// process. Where pidfd_open or the epoll set fails (kernel before 5.3,
// seccomp, another OS, out of descriptors: EMFILE, ENFILE) it checks
// that the pid runs (kill(pid, 0); on Windows OpenProcess and its exit
// code) and its start time every Poll for that pid instead: a bounded
// poll, which is how macOS and Windows always watch.
func (x *Exits) Exited(ctx context.Context, pid int, procStart string) <-chan struct{} {
	ch := make(chan struct{})
	if pid <= 0 {
		close(ch)
		return ch
	}
	poll := func() {
		if x.pollWait(ctx, pid, procStart) {
			close(ch)
		}
	}
	if !x.NoPidfd {
		fd, err := pidfdOpen(pid)
		switch {
		case err == nil:
			if x.ended(pid, procStart) {
				closePidfd(fd)
				close(ch)
				return ch
			}
			if x.watchPidfd(ctx, fd, ch, poll) == nil {
				return ch
			}
		case errors.Is(err, errNoSuchProcess):
			close(ch)
			return ch
		}
		// Any other failure: poll this pid.
	}
	go poll()
	return ch
}

// pollWait returns true when the process ended, false when ctx ended first.
func (x *Exits) pollWait(ctx context.Context, pid int, procStart string) bool {
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
	if processGone(pid) {
		return true
	}
	if procStart == "" {
		return false
	}
	start, err := procliveness.StartTime(x.procRoot(), pid)
	if err != nil {
		// Gone between the two checks, or no /proc: only the former ends it.
		return errors.Is(err, fs.ErrNotExist) && processUnanswered(pid)
	}
	return start != procStart
}
