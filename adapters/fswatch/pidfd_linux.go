package fswatch

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

func pidfdOpen(pid int) (int, error) { return unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK) }

func closePidfd(fd int) { unix.Close(fd) }

// pidfdSet waits for every pidfd of one Exits in a single epoll(7) set,
// from one goroutine (so one OS thread blocked in epoll_wait, however many
// processes are watched) holding one descriptor per watched process plus
// two (the epoll set and an eventfd that wakes it). The goroutine ends
// when the set has nothing left to wait for; the next watch starts a new
// one. Its fields are guarded by the owning Exits' mu.
type pidfdSet struct {
	epfd, wake int
	next       int32
	waiters    map[int32]*pidfdWaiter
}

// pidfdWaiter is one watched process. Its id, not its descriptor, is the
// epoll event's data, so a descriptor number reused after a removal is
// never taken for another waiter.
type pidfdWaiter struct {
	fd   int
	ch   chan struct{}
	stop func() bool // stops the context.AfterFunc that removes it
	// poll falls back to polling when the set fails.
	poll func()
}

// wakeID marks the eventfd's events.
const wakeID = -1

// watchPidfd adds fd (a pidfd the caller hands over: it is closed when the
// process exits, ctx ends, or this fails) to x's set; ch is closed when
// the process exits. It fails when no set can be made or fd not added.
func (x *Exits) watchPidfd(ctx context.Context, fd int, ch chan struct{}, poll func()) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.set == nil {
		s, err := newPidfdSet()
		if err != nil {
			unix.Close(fd)
			return err
		}
		x.set = s
		go x.loop(s)
	}
	s := x.set
	id := s.next
	for _, used := s.waiters[id]; used || id == wakeID; _, used = s.waiters[id] {
		id++
	}
	s.next = id + 1
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: id}); err != nil {
		unix.Close(fd)
		if len(s.waiters) == 0 {
			s.signal()
		}
		return err
	}
	w := &pidfdWaiter{fd: fd, ch: ch, poll: poll}
	s.waiters[id] = w
	w.stop = context.AfterFunc(ctx, func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if s.waiters[id] == w {
			s.remove(id, w)
			if len(s.waiters) == 0 {
				s.signal()
			}
		}
	})
	return nil
}

func newPidfdSet() (*pidfdSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeID}); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, err
	}
	return &pidfdSet{epfd: epfd, wake: wake, waiters: map[int32]*pidfdWaiter{}}, nil
}

// signal wakes the loop so it looks whether anything is left to wait for.
func (s *pidfdSet) signal() {
	var one = [8]byte{1}
	_, _ = unix.Write(s.wake, one[:])
}

func (s *pidfdSet) remove(id int32, w *pidfdWaiter) {
	delete(s.waiters, id)
	_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	unix.Close(w.fd)
}

// loop waits in epoll_wait until s has no waiters left, closing the
// channel of each process that exits. If epoll_wait fails, every waiter
// falls back to polling.
func (x *Exits) loop(s *pidfdSet) {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(s.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		x.mu.Lock()
		var fallback []func()
		if err != nil {
			for id, w := range s.waiters {
				s.remove(id, w)
				w.stop()
				fallback = append(fallback, w.poll)
			}
		}
		for _, ev := range events[:max(n, 0)] {
			if ev.Fd == wakeID {
				var b [8]byte
				_, _ = unix.Read(s.wake, b[:])
				continue
			}
			if w, ok := s.waiters[ev.Fd]; ok {
				s.remove(ev.Fd, w)
				w.stop()
				close(w.ch)
			}
		}
		done := len(s.waiters) == 0
		if done {
			if x.set == s {
				x.set = nil
			}
			unix.Close(s.epfd)
			unix.Close(s.wake)
		}
		x.mu.Unlock()
		for _, f := range fallback {
			go f()
		}
		if done {
			return
		}
	}
}

// pidfdSetMu is embedded in Exits (see exits.go).
type pidfdSetMu struct {
	mu  sync.Mutex
	set *pidfdSet
}
