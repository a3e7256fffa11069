package wiring

import (
	"context"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/peerctl/peerctl/adapters/busnode"
	"github.com/peerctl/peerctl/adapters/hostsfile"
	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/adapters/servesock"
	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// The adapters the command line uses outside the fx graph: the hosts
// file, the ssh channel and its nodes, the outbox read by list and
// watch, the fleet's bus (its settings: the client is internal/fleet's,
// linked into peerctl-mcp only), the service's folders and a bounded child
// process. internal/cli names none of them: it asks for them here.

// HostSchema is the hosts file's settings: the harness plug-ins' flags.
var HostSchema = hostsfile.NewSchema(Plugins().Flags())

// Host is one host of the hosts file (adapters/hostsfile): its
// destination, its peerctl ("" for the one on its PATH) and its settings
// by HostSchema key.
type Host = hostsfile.Host

// HostKeyPeerctl is the hosts file's key of a host's peerctl.
const HostKeyPeerctl = hostsfile.KeyPeerctl

// NewHostBook gives each --host's settings from the hosts file, found
// with getenv ($XDG_CONFIG_HOME).
func NewHostBook(getenv func(string) string) ports.HostBook {
	return hostsfile.NewBook(getenv, HostSchema)
}

// LoadHosts reads the hosts file; path is where it is (a file that does
// not exist is no hosts). A malformed file is an error naming its line.
func LoadHosts(getenv func(string) string) (hosts []Host, path string, err error) {
	if path, err = hostsfile.Path(getenv); err != nil {
		return nil, "", err
	}
	hosts, err = HostSchema.Load(path)
	return hosts, path, err
}

// SaveHosts writes hosts to the hosts file at path.
func SaveHosts(path string, hosts []Host) error { return HostSchema.Save(path, hosts) }

// SSHOptions configure the channel to other machines (adapters/sshhost).
type SSHOptions = sshhost.Options

// SSHSharesConnections is whether this system's ssh channel can share a
// connection between calls (ssh ControlMaster: not on Windows).
const SSHSharesConnections = sshhost.SharesConnections

// SSHChannel is the channel to other machines over the system ssh: a
// ports.Remote, and ports.HostExec for hosts install.
type SSHChannel interface {
	ports.Remote
	ports.HostExec
	// SharingOff says why calls do not share one connection ("": they do).
	SharingOff() string
}

// NewSSHChannel is the channel to other machines ($PEERCTL_SSH, else
// ssh); an error is a bad $PEERCTL_SSH.
func NewSSHChannel(o SSHOptions) (SSHChannel, error) {
	ch, err := sshhost.New(o)
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// NewHostNode is dest's node over remote: its peerctl, each call bounded
// by timeout.
func NewHostNode(remote ports.Remote, dest domain.Dest, timeout time.Duration) app.Node {
	return sshhost.NewNode(remote, dest, timeout)
}

// OutboxFileName is the outbox's file in the state folder.
const OutboxFileName = servesock.OutboxName

// OutboxReader is the outbox as its readers use it: ports.Outbox, and
// how many messages are in each state (serve status).
type OutboxReader interface {
	ports.Outbox
	Counts(ctx context.Context) (map[domain.OutboxState]int, error)
}

// Store opens the outbox's file (adapters/outbox, over SQLite). The one
// is internal/outboxstore.Store, linked into peerctl-mcp only: SQLite's
// package initialisation and size cost every command of a program that
// links it about a fifth of a `list` (docs/PERFORMANCE.md), so peerctl
// runs the commands that read the outbox as peerctl-mcp.
type Store interface {
	// Open opens (creating and migrating) the outbox at path, upgrade
	// rewriting each stored request of an older protocol to this one's:
	// peerctl serve, its one writer.
	Open(ctx context.Context, path string, upgrade func(request []byte) ([]byte, error)) (OutboxReader, error)
	// OpenReadOnly opens the outbox at path for reading: an error
	// wrapping fs.ErrNotExist when there is none yet.
	OpenReadOnly(ctx context.Context, path string) (OutboxReader, error)
}

// PrivateDir makes sure dir is a folder of this user's alone (created
// 0700, tightened, or refused: another owner, a symlink).
func PrivateDir(dir string) error { return servesock.PrivateDir(dir) }

// PrivateFile makes sure the file at path, if any, is this user's alone.
func PrivateFile(path string) error { return servesock.PrivateFile(path) }

// RealPath is path with its symbolic links resolved, as far as they can be.
func RealPath(path string) string { return servesock.RealPath(path) }

// RunBounded runs cmd in a process group of its own until it ends or ctx
// does (then the whole group is ended) and returns its stdout, of which
// at most max bytes are kept.
func RunBounded(ctx context.Context, cmd *exec.Cmd, max int) ([]byte, error) {
	out := &procgroup.Output{Max: max}
	cmd.Stdout = out
	if err := procgroup.Run(ctx, cmd); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// BusSettings say how to reach the fleet's NATS bus (adapters/natsbus's
// Settings): its servers, comma-separated (nats://HOST:PORT, tls://…), a
// credentials or nkey seed file ("" for none), the connection's name on
// the servers, and this machine's node name (domain.ParseNode; "" for
// none): the sender of its requests to other nodes, whose replies come
// under its own inbox prefix; Timeout bounds connecting and each call
// (list --fleet's whole read: $PEERCTL_HOST_TIMEOUT), 0 for the bus
// client's default.
type BusSettings struct {
	URLs, Creds, Name, Node string
	Timeout                 time.Duration
}

// Bus is the fleet's bus client: internal/fleet.Bus, over NATS. Only
// peerctl-mcp links it (cmd/peerctl-mcp): the NATS client's package
// initialisation cost every command, list from hooks and status lines
// among them, about a tenth of its start (docs/PERFORMANCE.md). peerctl,
// without it, runs a command that needs the bus as peerctl-mcp.
type Bus interface {
	// Check refuses settings the bus cannot use (a usage error): a bad
	// comma-separated list of NATS servers, a credentials file that cannot
	// be read or is no credentials or nkey seed file (named, never its
	// content). Names are the caller's to check.
	Check(s BusSettings) error
	// Listing is every node's presence on the bus, only's harnesses'
	// sessions (all when none), as one node's listing: a bus that does
	// not answer is host_unreachable.
	Listing(ctx context.Context, settings BusSettings, only []domain.Harness) app.NodeListing
	// Watch is every node's presence followed at once (watch --fleet):
	// each node's session events, each handed to events (false: stop),
	// a node that left as its sessions' gone and a "left" event, notes to
	// notes. It returns nil when ctx ends or events says stop, else
	// host_unreachable (the bus does not answer, or its connection ended).
	Watch(ctx context.Context, settings BusSettings, events func(wire.Event) bool, notes func(string)) error
	// Join joins the bus as p.Node, under its name (refused when another
	// live service holds it), and keeps its presence until life ends
	// (app.Present), answering other nodes' requests meanwhile
	// (p.Answer) and taking their durable mail (p.Mail); wait waits for
	// it to have left; post puts a durable send in another node's mail
	// (PostMail). A bus that does not answer yet is joined when it answers.
	Join(life context.Context, p Presence) (wait func(), post PostMail, err error)
	// Node is the node of the bus dest names (nats:NODE), reached with
	// settings (settings.Node: this machine's name, the sender), each call
	// bounded by timeout. A bad settings.Node or dest is an error.
	Node(settings BusSettings, dest domain.Dest, timeout time.Duration) (app.Node, error)
	// NodeKey is node's nkey seed in dir, DIR/NODE.nk (mode 0600), made
	// when missing (made true): public is its public key.
	NodeKey(dir, node string) (public string, made bool, err error)
	// AdminKey is the operator's nkey seed in dir (mode 0600), made when
	// missing (made true): the key Setup is run with.
	AdminKey(dir string) (public string, made bool, err error)
	// Config is the NATS servers' authorization block giving each of
	// users its own permissions and the operator (admin, AdminKey's
	// public key) its own (docs/FLEET.md); a node named twice is an
	// error.
	Config(admin string, users []NodeUser) (string, error)
	// Setup makes the fleet's mail stream and presence bucket on the bus
	// settings name (the operator's key, or an open bus) when missing,
	// and checks them when there: made and found name each. Errors: one
	// that is not peerctl's configuration, a key that may not make them,
	// a bus that does not answer (host_unreachable).
	Setup(ctx context.Context, settings BusSettings) (made, found []string, err error)
}

// NodeUser is one node's user in the servers' configuration (Bus.Config):
// its name and its nkey's public key (Bus.NodeKey).
type NodeUser struct {
	Node, PublicKey string
}

// Presence is how a service joins the fleet's bus (Bus.Join).
type Presence struct {
	Settings BusSettings
	// Node is the service's unique name on the bus; StateDir its state
	// folder (with the host name and the boot, who owns the name).
	Node, StateDir string
	// Version is this build's, published beside the sessions.
	Version string
	// Local is this machine's node, whose live sessions are published.
	Local app.Node
	// Answer is what the service answers the requests of node sender
	// with (its own use cases, its sends decided as from node:SENDER);
	// nil: it answers none.
	Answer func(sender string) app.Node
	// OnBus, when set, is given the service's connection once its node is
	// on the bus and answers requests (it carries this machine's commands'
	// requests as from the node: serve's "bus" op), and nil when it leaves.
	OnBus func(busnode.Carrier)
	// Mail is the service's outbox for other nodes' durable sends (nil:
	// the service takes none; they wait on the bus).
	Mail Mailbox
	// Logf hears what the presence does, a line at a time.
	Logf func(format string, args ...any)
	// View, when set, is given the service's live view of every node's
	// presence, kept from one watch of the whole presence bucket while the
	// node is on the bus (list --fleet asked of the service; the
	// dashboard's fleet).
	View *FleetView
}

// FleetView holds a service's live view of every node's presence (kept
// by Bus.Join); the zero value, and nil, hold none. Safe for concurrent
// use.
type FleetView struct {
	// URLs are the bus's servers as the service was given them: a client
	// asks it only about that bus.
	URLs string
	get  atomic.Pointer[func() (wire.Listing, uint64, bool)]
}

// Keep makes get the view: what list --fleet would print (every node's
// sessions, notes, partial), its generation (which changes whenever the
// listing may have), ok false while it has none (the bus away).
func (v *FleetView) Keep(get func() (l wire.Listing, gen uint64, ok bool)) { v.get.Store(&get) }

// Listing is every node's presence as list --fleet reads it, from the
// view; ok is false when there is none.
func (v *FleetView) Listing() (l wire.Listing, ok bool) {
	l, _, ok = v.Snapshot()
	return l, ok
}

// Snapshot is Listing with the view's generation: what is made of a
// listing (the service's encoded answer) can be kept while it stays. The
// listing is shared: read it, never change it.
func (v *FleetView) Snapshot() (l wire.Listing, gen uint64, ok bool) {
	if v == nil {
		return wire.Listing{}, 0, false
	}
	get := v.get.Load()
	if get == nil {
		return wire.Listing{}, 0, false
	}
	return (*get)()
}

// Mailbox is a service's outbox as other nodes' durable sends reach it
// over the bus (internal/serve's Server; docs/FLEET.md, "Durable sends").
type Mailbox interface {
	// Take keeps o, node sender's durable send, in the outbox, once per
	// sender and key, decided by the trust policy as from node:SENDER: nil
	// once stored (or before: the same key, also with another text,
	// which is dropped: no receipt); a *domain.Refusal when it
	// never will be; another error when it could not be stored now.
	// retry above 0: the sender's outbox retry number retry of it.
	Take(ctx context.Context, sender string, o wire.SendOrder, retry int) error
	// MailChanges are the receipts of the messages taken from the bus
	// that changed after outbox change number after, and the number to
	// ask after next.
	MailChanges(ctx context.Context, after int64) (receipts []wire.MailReceipt, next int64, err error)
	// Published is the change number up to which every receipt was
	// published, kept across restarts by SetPublished.
	Published(ctx context.Context) (int64, error)
	SetPublished(ctx context.Context, upTo int64) error
	// Receipt records r, node from's receipt of a message this service
	// put in its mail; an error when it could not be recorded now (it is
	// read again later).
	Receipt(ctx context.Context, from string, r wire.MailReceipt) error
}

// PostMail puts o, a durable send with its key, in node to's mail on the
// fleet's bus, and returns once the servers stored it; retry is its
// outbox retry number (0: its first post).
type PostMail func(ctx context.Context, to string, o wire.SendOrder, retry int) error
