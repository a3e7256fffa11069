//go:build linux

package sockowner_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
