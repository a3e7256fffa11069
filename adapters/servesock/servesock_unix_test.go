//go:build unix

package servesock_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/servesock"
)

// TestMain doubles as the other user's client (see TestPeerCheckRefusesOtherUID).
func TestMain(m *testing.M) {
	if path := os.Getenv("SERVESOCK_DIAL"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			os.Exit(3)
		}
		b := make([]byte, 1)
		_, _ = c.Read(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestSecondLockRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", servesock.LockName)
	l, err := servesock.TryLock(path)
	require.NoError(t, err)
	_, err = servesock.TryLock(path)
	require.ErrorIs(t, err, servesock.ErrLocked)
	require.NoError(t, l.Release())
	l2, err := servesock.TryLock(path)
	require.NoError(t, err, "a released lock is free again")
	require.NoError(t, l2.Release())
}

func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	wide := filepath.Join(base, "wide")
	require.NoError(t, os.Mkdir(wide, 0o755))
	require.NoError(t, servesock.PrivateDir(wide))
	fi, err := os.Stat(wide)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(wide, link))
	assert.ErrorContains(t, servesock.PrivateDir(link), "not a folder")
}

// The state folder is checked at the lock as the socket's folder is: a
// symlink is refused, a loose folder and lock file of this user narrowed.
func TestTryLockChecksTheStateFolder(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	require.NoError(t, os.Mkdir(state, 0o755))
	lock := filepath.Join(state, servesock.LockName)
	require.NoError(t, os.WriteFile(lock, []byte("1\n"), 0o644))
	l, err := servesock.TryLock(lock)
	require.NoError(t, err)
	require.NoError(t, l.Release())
	for _, p := range []string{state, lock} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Zero(t, fi.Mode().Perm()&0o077, "%s is narrowed: %v", p, fi.Mode())
	}
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(state, link))
	_, err = servesock.TryLock(filepath.Join(link, servesock.LockName))
	assert.ErrorContains(t, err, "not a folder")
}

func TestPrivateFile(t *testing.T) {
	base := t.TempDir()
	assert.NoError(t, servesock.PrivateFile(filepath.Join(base, "absent")), "an absent file is no error")
	loose := filepath.Join(base, "loose")
	require.NoError(t, os.WriteFile(loose, nil, 0o644))
	require.NoError(t, os.Chmod(loose, 0o644))
	require.NoError(t, servesock.PrivateFile(loose))
	fi, err := os.Stat(loose)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(loose, link))
	assert.ErrorContains(t, servesock.PrivateFile(link), "not a regular file")
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(loose, 65534, 65534))
		assert.ErrorContains(t, servesock.PrivateFile(loose), "belongs to uid 65534")
	}
}

func TestListenRemovesDeadSocketNotFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	path := filepath.Join(dir, servesock.SocketName("/state"))
	ln, err := servesock.Listen(path)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	// A service that died leaves its socket: the next one takes the path.
	ln.SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	ln2, err := servesock.Listen(path)
	require.NoError(t, err)
	require.NoError(t, ln2.Close())
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	_, err = servesock.Listen(path)
	assert.ErrorContains(t, err, "not a socket")
}

func TestPeerCheckSameUser(t *testing.T) {
	path := filepath.Join(t.TempDir(), servesock.SocketName("/state"))
	ln, err := servesock.Listen(path)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := net.Dial("unix", path)
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			_ = c.Close()
		}
	}()
	conn, err := ln.AcceptUnix()
	require.NoError(t, err)
	defer conn.Close()
	uid, err := servesock.PeerCheck(conn)
	require.NoError(t, err)
	assert.Equal(t, os.Geteuid(), uid)
}

func TestPeerCheckRefusesOtherUID(t *testing.T) {
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		t.Skip("needs root to run a client as another uid")
	}
	// The other uid must reach the socket, so that its credentials are
	// what refuses it: a folder it can enter, a copy of this test binary.
	dir, err := os.MkdirTemp("", "servesock-peer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, "client")
	b, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	path := filepath.Join(dir, "run", servesock.SocketName("/state"))
	ln, err := servesock.Listen(path)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(path), 0o755))
	require.NoError(t, os.Chmod(path, 0o777))
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "SERVESOCK_DIAL="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	require.NoError(t, cmd.Start())
	conn, err := ln.AcceptUnix()
	require.NoError(t, err)
	uid, err := servesock.PeerCheck(conn)
	_ = conn.Close()
	require.ErrorIs(t, err, servesock.ErrOtherUser)
	assert.Equal(t, 65534, uid)
	require.NoError(t, cmd.Wait())
}

// A socket per state folder: two folders never share one; two spellings
// of one folder (a symlink, a trailing slash, before and after it is
// created) name the same.
func TestSocketNamePerStateFolder(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a", "peerctl"), filepath.Join(base, "b", "peerctl")
	before := servesock.SocketName(a)
	assert.NotEqual(t, servesock.SocketName(a), servesock.SocketName(b))
	require.NoError(t, os.MkdirAll(a, 0o700))
	assert.Equal(t, before, servesock.SocketName(a), "the same before and after the folder is created")
	assert.Equal(t, before, servesock.SocketName(a+"/"))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(filepath.Join(base, "a"), link))
	assert.Equal(t, before, servesock.SocketName(filepath.Join(link, "peerctl")))
	assert.Regexp(t, `^serve-[0-9a-f]{16}\.sock$`, before)
}
