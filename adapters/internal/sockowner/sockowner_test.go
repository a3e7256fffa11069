//go:build linux

package sockowner_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/ports/transporttest"
)

func TestEncodeDecode(t *testing.T) {
	for _, c := range []struct{ addr, enc string }{
		{"127.0.0.1:4096", "0100007F:1000"},
		{"127.0.0.2:80", "0200007F:0050"},
		{"[::1]:4096", "00000000000000000000000001000000:1000"},
		{"[::ffff:127.0.0.2]:4096", "0000000000000000FFFF00000200007F:1000"},
	} {
		ap := netip.MustParseAddrPort(c.addr)
		assert.Equal(t, c.enc, sockowner.Encode(ap), c.addr)
		back, ok := sockowner.Decode(c.enc)
		require.True(t, ok, c.enc)
		assert.Equal(t, ap, back, c.enc)
	}
	for _, bad := range []string{"", "0100007F", "0100007:1000", "zz00007F:1000", "0100007F:10000"} {
		_, ok := sockowner.Decode(bad)
		assert.False(t, ok, bad)
	}
}

// accepting listens on addr in this process and accepts every
// connection (holding it open), as a server does.
func accepting(t *testing.T, network, addr string) string {
	t.Helper()
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// A connection to this process's own listener, in either family, is
// proved this process's; to another pid it is a mismatch naming this
// process as the holder.
func TestProveOwnListener(t *testing.T) {
	for _, c := range []struct{ network, addr string }{{"tcp4", "127.0.0.2:0"}, {"tcp6", "[::1]:0"}, {"tcp", "[::]:0"}} {
		addr := accepting(t, c.network, c.addr)
		ap := netip.MustParseAddrPort(addr)
		if ap.Addr().IsUnspecified() {
			addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()).String() // a dual-stack listener, dialled in IPv4
		}
		d := sockowner.Prover{}.Dialer(os.Getpid(), &net.Dialer{})
		conn, err := d(context.Background(), "tcp", addr)
		require.NoError(t, err, addr)
		conn.Close()

		conn, err = net.Dial("tcp", addr)
		require.NoError(t, err)
		err = sockowner.Prover{}.Prove(context.Background(), conn, 1)
		conn.Close()
		var m *sockowner.Mismatch
		require.ErrorAs(t, err, &m, addr)
		assert.Equal(t, 1, m.PID)
		assert.Equal(t, os.Getpid(), m.Holder)
		assert.Contains(t, m.Error(), "is not pid 1's")
	}
}

// A listener of another Unix user's process is no target's here: the
// dialer refuses it and writes nothing.
func TestProveImpostor(t *testing.T) {
	im := transporttest.ListenAsOther(t, "127.0.0.1:0")
	_, err := sockowner.Prover{}.Dialer(os.Getpid(), &net.Dialer{})(context.Background(), "tcp", im.Addr)
	var m *sockowner.Mismatch
	require.ErrorAs(t, err, &m)
	assert.Equal(t, im.UID, m.UID)
	assert.Contains(t, m.Error(), im.Addr)
	assert.Empty(t, im.Received())
}

// A listener that never accepts cannot be proved anyone's: the wait is
// bounded by the context.
func TestProveUnaccepted(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = sockowner.Prover{}.Prove(ctx, conn, os.Getpid())
	assert.True(t, errors.Is(err, sockowner.ErrUnproven), "%v", err)
}

// addrConn is a connection with given ends, for a made-up /proc.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// An earlier connection between the same two addresses lingering in
// TIME_WAIT (no inode; loopback reuses a port at once) is not the one
// dialled: the open connection's row decides.
func TestProveSkipsTimeWait(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "net"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "77", "fd"), 0o755))
	require.NoError(t, os.Symlink("socket:[4242]", filepath.Join(root, "77", "fd", "18")))
	server, client := netip.MustParseAddrPort("127.0.0.2:4096"), netip.MustParseAddrPort("127.0.0.1:50000")
	row := func(state, inode string) string {
		return "   0: " + sockowner.Encode(server) + " " + sockowner.Encode(client) + " " + state + " 00000000:00000000 00:00000000 00000000     0        0 " + inode + " 1 0 20 4 30 10 -1"
	}
	table := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		row("06", "0") + "\n" + row("01", "4242") + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(table), 0o644))
	conn := addrConn{local: net.TCPAddrFromAddrPort(client), remote: net.TCPAddrFromAddrPort(server)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.NoError(t, sockowner.Prover{Root: root}.Prove(ctx, conn, 77))
}

// A listener that defers its accepts until the client writes
// (TCP_DEFER_ACCEPT, as Bun's server behind opencode does) leaves the
// connection pending, with no inode, until the first byte: the connection
// is proved by its listener at once, no accept awaited (the context here
// is already over), and it is no other pid's.
func TestProveDeferredAccept(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, 30) })
		return errors.Join(err, serr)
	}}
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	over, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, sockowner.Prover{}.Prove(over, conn, os.Getpid()))
	assert.Error(t, sockowner.Prover{}.Prove(over, conn, 1))
}

// proveIn proves, with no time to await an accept, the connection from
// client to server for pid 77 (which holds socket 4242) in a made-up
// /proc whose net/tcp and net/tcp6 are tcp and tcp6.
func proveIn(t *testing.T, tcp, tcp6 string, client, server netip.AddrPort) error {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "net"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "77", "fd"), 0o755))
	require.NoError(t, os.Symlink("socket:[4242]", filepath.Join(root, "77", "fd", "18")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "net", "tcp6"), []byte(tcp6), 0o644))
	conn := addrConn{local: net.TCPAddrFromAddrPort(client), remote: net.TCPAddrFromAddrPort(server)}
	over, cancel := context.WithCancel(context.Background())
	cancel()
	return sockowner.Prover{Root: root}.Prove(over, conn, 77)
}

// A pending connection (SYN_RECV, no inode) is proved by the listeners on
// its port only when every one is the target's and its uid is the
// target's; otherwise its accept is awaited, as for any other.
func TestProvePendingNeedsEveryListener(t *testing.T) {
	server, client := netip.MustParseAddrPort("127.0.0.1:4096"), netip.MustParseAddrPort("127.0.0.1:50000")
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	row := func(local, remote, state, uid, inode string) string {
		return "   0: " + local + " " + remote + " " + state + " 00000000:00000000 00:00000000 00000000 " + uid + "        0 " + inode + " 1 0 20 4 30 10 -1\n"
	}
	pending := row(sockowner.Encode(server), sockowner.Encode(client), "03", "0", "0")
	ours := row(sockowner.Encode(server), "00000000:0000", "0A", "0", "4242")
	anyAddr := sockowner.Encode(netip.MustParseAddrPort("0.0.0.0:4096"))
	theirs := row(anyAddr, "00000000:0000", "0A", "0", "5151")
	for _, c := range []struct {
		name, tcp, tcp6 string
		proved          bool
	}{
		{"the only listener is the target's", pending + ours, "", true},
		{"another process listens on the port too", pending + ours + theirs, "", false},
		{"another process listens on the port in tcp6", pending + ours, row("00000000000000000000000000000000:1000", "00000000000000000000000000000000:0000", "0A", "0", "5151"), false},
		{"the listener's uid is not the target's", row(sockowner.Encode(server), sockowner.Encode(client), "03", "1000", "0") + ours, "", false},
		{"no listener left", pending, "", false},
	} {
		err := proveIn(t, head+c.tcp, head+c.tcp6, client, server)
		if c.proved {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorIs(t, err, sockowner.ErrUnproven, c.name)
		}
	}
}

// A table is read at most 1<<18 rows deep (the bound of one table): a
// connection's row past it is not found, and a pending connection is not
// proved by its listener when the table runs past it (a row beyond may be
// another process's listener on the port). Blank lines count as rows.
func TestProveReadsATableToItsBound(t *testing.T) {
	const bound = 1 << 18
	server, client := netip.MustParseAddrPort("127.0.0.1:4096"), netip.MustParseAddrPort("127.0.0.1:50000")
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	row := func(local, remote, state, inode string) string {
		return "   0: " + local + " " + remote + " " + state + " 00000000:00000000 00:00000000 00000000 0        0 " + inode + " 1 0 20 4 30 10 -1\n"
	}
	filler := strings.Repeat("\n", bound)
	open := row(sockowner.Encode(server), sockowner.Encode(client), "01", "4242")
	pending := row(sockowner.Encode(server), sockowner.Encode(client), "03", "0")
	ours := row(sockowner.Encode(server), "00000000:0000", "0A", "4242")
	for _, c := range []struct {
		name, tcp string
		proved    bool
	}{
		{"the open connection's row within the bound", head + open + filler, true},
		{"the open connection's row past the bound", head + filler + open, false},
		{"a pending connection, its listener alone within the bound", head + pending + ours, true},
		{"a pending connection, the table past the bound", head + pending + ours + filler, false},
	} {
		err := proveIn(t, c.tcp, "", client, server)
		if c.proved {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorIs(t, err, sockowner.ErrUnproven, c.name)
		}
	}
}
