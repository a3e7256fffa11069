// Package sockowner proves whose a TCP connection is: that the listener
// a dialled loopback connection reached is the target process's own, by
// the kernel's tables (Linux proc(5)): the connection's server-side
// socket, the row of /proc/net/tcp or /proc/net/tcp6 whose local address
// is the address dialled and whose remote address is the connection's
// own end, has an inode that is among the target's open files
// (/proc/<pid>/fd, links "socket:[<inode>]"). A listener that defers its
// accepts until the client writes (TCP_DEFER_ACCEPT, as Bun's server does:
// opencode's) leaves that socket without an inode, pending (SYN_RECV), for
// about a second or until data comes: then the connection is proved by
// its listener, every socket listening on the dialled port being the
// target's own (a pending connection is accepted only by the listener
// that took its SYN). A transport that reaches
// its target by a network address dials with Dialer, so that the check
// runs on the connection before any byte of a request (a password, a
// text) is written, and nothing at all is written to a listener that is
// not the target's.
package sockowner

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds: how long a connection may wait to be accepted before whose it
// is is given up as unproven, when the caller's context sets no earlier
// deadline (a listener accepts within microseconds, but a busy one may
// take seconds: a real opencode server finishing a turn on a loaded
// machine took over 5 s), the rows read of one table, the open files read
// of one process and the processes looked at to name what holds an
// address.
const (
	AcceptWait = 30 * time.Second
	maxRows    = 1 << 18
	maxFDs     = 1 << 16
	maxProcs   = 1 << 16
)

// ErrUnproven is wrapped when whose the listener is could not be told
// (the connection was not accepted within AcceptWait, or the kernel's
// tables do not show it: another network namespace, no /proc). Nothing
// was written to the connection.
var ErrUnproven = errors.New("whose listener this is could not be proved")

// Mismatch is a listener proved not to be the target's: the connection's
// server-side socket is held by another process. Nothing was written to
// it.
type Mismatch struct {
	// Addr is the address dialled ("127.0.0.1:4096").
	Addr string
	// PID is the target process.
	PID int
	// UID is the uid owning the server-side socket (-1: unknown).
	UID int
	// Holder is the process found holding it (0: none found, e.g. another
	// user's, whose open files cannot be read); Comm its command name.
	Holder int
	Comm   string
}

func (m *Mismatch) Error() string {
	var held []string
	if m.Holder > 0 {
		h := "pid " + strconv.Itoa(m.Holder)
		if m.Comm != "" {
			h += " (" + m.Comm + ")"
		}
		held = append(held, h)
	}
	if m.UID >= 0 {
		held = append(held, "uid "+strconv.Itoa(m.UID))
	}
	who := "another process"
	if len(held) > 0 {
		who = strings.Join(held, ", ")
	}
	return fmt.Sprintf("the listener at %s is not pid %d's: it is held by %s", m.Addr, m.PID, who)
}

// Prover reads the kernel's tables under Root ("" is "/proc").
type Prover struct{ Root string }

func (p Prover) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// Dialer is a DialContext (for an http.Transport) that dials TCP and
// proves the connection pid's (Prove) before returning it; a connection
// that is not, or cannot be proved, is closed unwritten and the error is
// a *Mismatch or wraps ErrUnproven.
func (p Prover) Dialer(pid int, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := p.Prove(ctx, conn, pid); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
}

// Prove checks that conn (a TCP connection this process dialled) reached
// a listener of process pid: see the package. Until the server accepts
// the connection its socket has no inode; Prove waits for that until
// ctx's end, at most AcceptWait. A socket held by another process (or
// owned by another uid than pid's) is a *Mismatch at once.
func (p Prover) Prove(ctx context.Context, conn net.Conn, pid int) error {
	local, lok := addrPort(conn.LocalAddr())
	remote, rok := addrPort(conn.RemoteAddr())
	if !lok || !rok {
		return fmt.Errorf("%w: %s is not a TCP connection", ErrUnproven, conn.RemoteAddr())
	}
	ctx, cancel := context.WithTimeout(ctx, AcceptWait)
	defer cancel()
	uid := OwnerUID(filepath.Join(p.root(), strconv.Itoa(pid)))
	wait := time.Millisecond
	for {
		row, found, listeners := p.serverSide(remote, local)
		if found && row.pending && (uid < 0 || row.uid == uid) && p.alone(pid, listeners) {
			return nil // it can only be accepted by pid's listener, which waits for our first byte
		}
		if found && row.inode != 0 {
			if p.holds(pid, row.inode) {
				return nil
			}
			holder, comm := p.holder(row.inode)
			if holder != 0 && holder != pid || uid >= 0 && row.uid != uid {
				return &Mismatch{Addr: remote.String(), PID: pid, UID: row.uid, Holder: holder, Comm: comm}
			}
			// Accepted a moment ago: the inode is set before the file
			// is installed in the holder's table. Look again.
		}
		select {
		case <-ctx.Done():
			switch {
			case !found:
				return fmt.Errorf("%w: the connection to %s is not in %s/net/tcp or tcp6 (another network namespace?)", ErrUnproven, remote, p.root())
			case row.inode == 0:
				return fmt.Errorf("%w: the listener at %s did not accept the connection in time", ErrUnproven, remote)
			}
			return &Mismatch{Addr: remote.String(), PID: pid, UID: row.uid}
		case <-time.After(wait):
			wait = min(2*wait, 50*time.Millisecond)
		}
	}
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	return t.AddrPort(), true
}

// row is one socket of /proc/net/tcp*: its owner's uid and inode (0:
// not accepted yet).
type row struct {
	uid   int
	inode uint64
	// pending is a connection not yet accepted by a listener that defers
	// its accepts (SYN_RECV; inode 0, uid the listener's).
	pending bool
}

// serverSide finds the socket whose local address is server and remote
// address is client. A connection to an IPv4 address may have its
// server side in tcp6 (a dual-stack listener), with IPv4-mapped
// addresses. When that socket is pending, listeners are the inodes of
// every socket listening on server's port, in tcp and tcp6 on any
// address, read in the same passes (nil when a table could not be read
// whole, or ran past its bound: another listener may hide there); each
// table is read once, and the second not at all when the first settles
// it.
func (p Prover) serverSide(server, client netip.AddrPort) (r row, found bool, listeners []uint64) {
	type table struct {
		name           string
		server, client string
	}
	var tables []table
	if server.Addr().Unmap().Is4() {
		s, c := server.Addr().Unmap(), client.Addr().Unmap()
		tables = append(tables, table{"tcp", Encode(netip.AddrPortFrom(s, server.Port())), Encode(netip.AddrPortFrom(c, client.Port()))})
		s, c = netip.AddrFrom16(s.As16()), netip.AddrFrom16(c.As16())
		tables = append(tables, table{"tcp6", Encode(netip.AddrPortFrom(s, server.Port())), Encode(netip.AddrPortFrom(c, client.Port()))})
	} else {
		// An IPv6 connection's server side is in tcp6; tcp is read for
		// its listeners only.
		tables = append(tables, table{"tcp6", Encode(server), Encode(client)}, table{"tcp", "", ""})
	}
	suffix := fmt.Sprintf(":%04X", server.Port())
	whole := true
	for i, t := range tables {
		if i > 0 && found && !r.pending {
			break // an accepted connection: its listeners are not needed
		}
		tr, tfound, tl, twhole := p.scan(t.name, t.server, t.client, suffix)
		if !found && tfound {
			r, found = tr, true
		}
		listeners = append(listeners, tl...)
		whole = whole && twhole
	}
	if !found || !r.pending || !whole {
		listeners = nil
	}
	return r, found, listeners
}

// scan reads one table (proc(5): "sl local_address rem_address st
// tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …") for the
// open (or pending) connection's row with local address local and remote
// address remote (none looked for when local is ""), and the inodes of
// the sockets listening on an address ending in portSuffix (":1000").
// whole is false when the table was read but not whole (an error, past
// its bound, a listener with no inode); a table that cannot be opened is
// whole and empty.
func (p Prover) scan(table, local, remote, portSuffix string) (r row, found bool, listeners []uint64, whole bool) {
	f, err := os.Open(filepath.Join(p.root(), "net", table))
	if err != nil {
		return row{}, false, nil, true
	}
	defer f.Close()
	whole = true
	sc := bufio.NewScanner(f)
	n := 0
	for ; sc.Scan(); n++ {
		if n == maxRows {
			whole = false // a row beyond may be another listener
			break
		}
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		if fs[3] == listen && strings.HasSuffix(fs[1], portSuffix) {
			ino, err := strconv.ParseUint(fs[9], 10, 64)
			if err != nil || ino == 0 {
				whole = false
				continue
			}
			listeners = append(listeners, ino)
			continue
		}
		if found || local == "" || fs[1] != local || fs[2] != remote || !open(fs[3]) && fs[3] != synRecv {
			continue
		}
		uid, err1 := strconv.Atoi(fs[7])
		ino, err2 := strconv.ParseUint(fs[9], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		r, found = row{uid: uid, inode: ino, pending: fs[3] == synRecv && ino == 0}, true
	}
	if sc.Err() != nil {
		whole = false
	}
	return r, found, listeners, whole
}

// Socket states of /proc/net/tcp* (hex, the kernel's TCP_* numbers):
// SYN_RECV, a connection that a listener deferring its accepts has not
// accepted yet; LISTEN, a listening socket.
const (
	synRecv = "03"
	listen  = "0A"
)

// alone reports whether there is a listener and every one (their
// inodes, serverSide's) is held by pid: then whichever took a connection
// to their port is pid's.
func (p Prover) alone(pid int, listeners []uint64) bool {
	if len(listeners) == 0 {
		return false
	}
	held := Sockets(filepath.Join(p.root(), strconv.Itoa(pid)))
	for _, ino := range listeners {
		if !slices.Contains(held, ino) {
			return false
		}
	}
	return true
}

// open reports whether a socket state of /proc/net/tcp* (hex, the
// kernel's TCP_* numbers) is a connection's that is open: ESTABLISHED
// (01) or CLOSE_WAIT (08, the client end closed first). An earlier
// connection between the same two addresses may linger in TIME_WAIT
// (06), with no inode, and is not ours (loopback reuses ports at once).
func open(state string) bool { return state == "01" || state == "08" }

// Encode is an address as /proc/net/tcp* writes it: the address's bytes
// in 32-bit words of host byte order, in hex (8 digits for IPv4, 32 for
// IPv6), a colon, the port in 4 hex digits.
func Encode(a netip.AddrPort) string {
	b := a.Addr().AsSlice()
	out := make([]byte, len(b))
	for i := 0; i+4 <= len(b); i += 4 {
		binary.NativeEndian.PutUint32(out[i:], binary.BigEndian.Uint32(b[i:]))
	}
	return strings.ToUpper(hex.EncodeToString(out)) + fmt.Sprintf(":%04X", a.Port())
}

// Decode reads an address of /proc/net/tcp* (Encode's inverse).
func Decode(s string) (netip.AddrPort, bool) {
	h, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	b, err2 := hex.DecodeString(h)
	if err != nil || err2 != nil || len(b) != 4 && len(b) != 16 {
		return netip.AddrPort{}, false
	}
	for i := 0; i+4 <= len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.NativeEndian.Uint32(b[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a, uint16(port)), true
}

// holds reports whether process pid has socket inode open.
func (p Prover) holds(pid int, inode uint64) bool {
	return slices.Contains(Sockets(filepath.Join(p.root(), strconv.Itoa(pid))), inode)
}

// holder is a process found holding socket inode, with its command name
// (0 when none is found: another user's open files cannot be read).
func (p Prover) holder(inode uint64) (int, string) {
	ents, _ := os.ReadDir(p.root())
	for i, e := range ents {
		if i >= maxProcs {
			break
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(p.root(), e.Name())
		if slices.Contains(Sockets(dir), inode) {
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			return pid, strings.TrimSpace(string(comm))
		}
	}
	return 0, ""
}

// Sockets are the inodes of the sockets the process at dir (/proc/<pid>)
// holds open (its fds "socket:[<inode>]"), in fd order, at most maxFDs
// looked at.
func Sockets(dir string) []uint64 {
	fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
	var out []uint64
	for j, fd := range fds {
		if j >= maxFDs {
			break
		}
		target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if err != nil {
			continue
		}
		ino, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(ino, "]"), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}
