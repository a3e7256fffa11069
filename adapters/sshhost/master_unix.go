//go:build !windows

package sshhost

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/domain"
)

// startMaster makes sure a master connection serves the socket path (one
// destination's whole configuration: configKey), and reports whether one
// does. Under a lock of the socket's own (path+".lock", flock), so that
// parallel peerctl runs start one master between them: when nothing
// answers on the socket (masterAnswers), a stale socket file is removed and
// `ssh -o ControlMaster=yes -o ControlPersist=60 -N -f -- DEST` starts one,
// in a session of its own (setsid) with nothing of this run's on its
// stdin, stdout or stderr: it outlives this call and this run (until
// ControlPersist seconds after its last call), and so does its
// ProxyCommand. The whole wait is bounded by ctx (the call's) and by the
// connect timeout plus the hello timeout; an ssh that has not
// authenticated by then is killed with its process group (its
// ProxyCommand too).
func (c *Channel) startMaster(ctx context.Context, dest domain.Dest, path string) bool {
	if masterAnswers(path) {
		return true // the common case, at the cost of one connect(2)
	}
	limit := c.opts.ConnectTimeout + c.opts.HelloTimeout
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	unlock, err := lockFile(ctx, path+".lock")
	if err != nil {
		c.opts.Log.Debug("ssh master", "dest", dest.String(), "lock", err)
		return false
	}
	defer unlock()
	if masterAnswers(path) {
		return true // another run started it while this one waited
	}
	base := append(append([]string(nil), c.ssh...), "-o", "ControlPath="+path)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.opts.Log.Debug("ssh master", "dest", dest.String(), "stale socket", err)
		return false
	}
	argv := append(base, "-o", "ControlMaster=yes", "-o", "ControlPersist="+strconv.Itoa(controlPersistSeconds), "-N", "-f", "--", dest.String())
	c.opts.Log.Debug("ssh master", "argv", argv)
	err = c.sshQuiet(ctx, argv)
	c.opts.Log.Debug("ssh master", "dest", dest.String(), "err", err)
	return err == nil
}

// sshQuiet runs one ssh in a session of its own, stdin, stdout and stderr
// on /dev/null (so nothing it leaves behind holds this run's pipes),
// bounded by ctx (then its process group is killed).
func (c *Channel) sshQuiet(ctx context.Context, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ctx.Err()
	}
}

// lockFile takes an exclusive flock on path (made 0600 when absent),
// polling until ctx ends; unlock releases it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Clean(path), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// masterAnswers reports whether something listens on the socket at path:
// a master connection (the folder is peerctl's own, 0700), asked without
// starting a process. A socket file nothing listens on is a master that
// is gone.
func masterAnswers(path string) bool {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
