//go:build unix

package servesock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// PrivateDir creates dir (and its parents) when absent and checks that it
// is a real folder (not a symlink) owned by this uid, open to no one else:
// a folder of this uid with group or other bits set (an older peerctl's
// 0755, say) is narrowed to its owner's bits. Anything else is an error
// naming what is wrong, and nothing in the folder is to be used. The
// service's socket folder and its state folder (the outbox, the lock, the
// log) are both checked with it.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("examine %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a folder (a symlink?): refusing to keep peerctl's private files there", dir)
	}
	return narrow(dir, st, "folder")
}

// PrivateFile checks an existing file as PrivateDir checks a folder: a
// regular file (not a symlink) of this uid, its group and other bits
// cleared when set (0644 becomes 0600). An absent file is no error.
func PrivateFile(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return fmt.Errorf("examine %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file (a symlink?): refusing to use it", path)
	}
	return narrow(path, st, "file")
}

// narrow refuses path (a folder or file, st its Lstat) when another uid
// owns it, and clears its group and other bits.
func narrow(path string, st unix.Stat_t, what string) error {
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): refusing to use a %s another user controls", path, st.Uid, os.Geteuid(), what)
	}
	if perm := os.FileMode(st.Mode) & os.ModePerm; perm&0o077 != 0 {
		if err := os.Chmod(path, perm&^0o077); err != nil {
			return fmt.Errorf("narrow %s to %#o: %w", path, perm&^0o077, err)
		}
	}
	return nil
}

// Lock is an exclusive flock(2) on a file, held until Release or the
// process's end (kill -9 included: the kernel drops it).
type Lock struct{ f *os.File }

// TryLock takes the lock on path (creating the file, 0600, in its folder,
// which is checked and created by PrivateDir) without waiting: ErrLocked
// when another process holds it. The file's content is the holder's pid,
// for people; the lock is the flock, not the pid.
func TryLock(path string) (*Lock, error) {
	if err := PrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := PrivateFile(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	return &Lock{f: f}, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return l.f.Close()
}

// Listen makes PrivateDir(filepath.Dir(path)) and listens on the Unix
// socket path. Call it holding the Lock: a socket file left by a service
// that died is removed first (no live service can own it then).
func Listen(path string) (*net.UnixListener, error) {
	if err := PrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: refusing to replace it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the dead service's socket %s: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return ln, nil
}

// PeerCheck returns the uid at the other end of conn, and ErrOtherUser
// (wrapped, naming it) when that is not this process's effective uid.
// Linux reads SO_PEERCRED; macOS and the BSDs getpeereid (LOCAL_PEERCRED).
func PeerCheck(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("peer credentials: %w", err)
	}
	uid := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, cerr = peerUID(int(fd)) }); err != nil {
		return -1, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return -1, fmt.Errorf("peer credentials: %w", cerr)
	}
	if uid != os.Geteuid() {
		return uid, fmt.Errorf("uid %d, this service serves uid %d only: %w", uid, os.Geteuid(), ErrOtherUser)
	}
	return uid, nil
}
