//go:build unix

package qweninbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openShared binds folder/inbox.sock under a non-blocking flock of
// folder/inbox.lock; ok is false when that cannot be done safely.
func openShared(folder string) (*Inbox, bool) {
	if err := os.Mkdir(folder, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, false
	}
	var st unix.Stat_t
	if err := unix.Lstat(folder, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
		int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return nil, false
	}
	lock, err := os.OpenFile(filepath.Join(folder, "inbox.lock"), os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, false
	}
	path := filepath.Join(folder, SenderInboxName)
	_ = os.Remove(path) // a socket left by a killed send; we hold the lock
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		lock.Close()
		return nil, false
	}
	ln.SetUnlinkOnClose(true)
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		ln.Close()
		lock.Close()
		return nil, false
	}
	in := newInbox(path, hex.EncodeToString(tok[:]), ln, func() {
		lock.Close() // releases the flock
	})
	return in, true
}
