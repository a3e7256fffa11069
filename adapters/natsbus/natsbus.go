// Package natsbus is the fleet's bus: NATS JetStream (github.com/nats-io/nats.go
// and its jetstream package; a server 2.11 or newer, for the presence
// bucket's limit markers). It carries presence (each node's service keeps
// its live sessions in one key of the KV bucket PresenceBucket, and `list
// --fleet` reads every key at once) and requests (Node asks a node's
// service for a use case, Bus.Answer answers them), and prints the
// servers' permissions for per-node credentials (ServerConfig);
// docs/FLEET.md.
//
// Everything read from the bus is another machine's word: a presence
// document is bounded (MaxDocBytes), read with exact keys (ports/jsonexact),
// its node name and endpoints validated; text is escaped where it is
// printed, as a far side's over ssh is.
package natsbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/peerctl/peerctl/ports/wire"
)

// PresenceBucket is the JetStream KV bucket of presence: one key per node
// (its name), one presence document each (Doc).
const PresenceBucket = "peerctl_presence"

// TTL is how long a node's presence outlives its last refresh: the
// bucket's max age. A node whose service is gone (killed, its machine
// off, cut from the bus) drops out of the list within TTL, and its key's
// removal is published as a limit marker (a delete) that a watcher sees.
const TTL = 20 * time.Second

// bucketTTL is the TTL a new bucket gets (tests shorten it).
var bucketTTL = TTL

// Refresh is how often a service rewrites its presence when nothing
// changed: a quarter of TTL, so three refreshes may be lost before it
// drops out.
const Refresh = 5 * time.Second

// MaxDocBytes bounds one presence document (also the bucket's max value
// size): 1 MiB, about 1,500 sessions of a node.
const MaxDocBytes = 1 << 20

// MaxNodes bounds how many nodes one fleet listing holds; more leave the
// least recently updated out, the listing partial, with a warning.
const MaxNodes = 10000

// tooManyNodes is the warning of a fleet of more than MaxNodes nodes.
var tooManyNodes = fmt.Sprintf("warning: more than %d nodes on the bus: the least recently updated are left out", MaxNodes)

// Settings is how this process reaches the bus: the command line's
// --nats, --nats-creds and --node, else $PEERCTL_NATS, $PEERCTL_NATS_CREDS
// and $PEERCTL_NODE.
type Settings struct {
	// URLs are the servers, comma-separated (nats://HOST:PORT, or
	// tls://HOST:PORT for TLS); "" means no bus.
	URLs string
	// Creds is a NATS credentials file (a user JWT and its nkey seed), or
	// an nkey seed file ("SU..."); "" for none.
	Creds string
	// Name is the connection's name on the servers (their monitoring
	// shows it): "peerctl serve NODE" or "peerctl list".
	Name string
	// Node is this machine's node name (domain.ParseNode; "" for none):
	// its requests are from it, and its connection's replies come under
	// its own InboxPrefix, which per-node credentials let only it read.
	Node string
	// Operator: the operator's connection (AdminKey's credentials), its
	// replies under AdminInbox (Node is ignored).
	Operator bool
	// Timeout bounds connecting (each server tried) and each request;
	// 0 means 5 s.
	Timeout time.Duration
	// PingInterval is how often the connection pings its server; two
	// pings unanswered at the next make it stale, closed without
	// reconnect (nats.ErrStaleConnection). 0: the client's default, 2 min.
	PingInterval time.Duration
}

// Bus is a connection to the bus and its JetStream context.
type Bus struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	timeout time.Duration
	// creds: connected with credentials (per-node ones may not make the
	// fleet's streams: mailStream, presence).
	creds bool
}

// ErrNoServers is wrapped by Connect's error when no server answered.
var ErrNoServers = errors.New("no NATS server answered")

// Connect reaches the bus as s says. A long-lived caller (the service)
// passes reconnect: the servers are tried for ever, every second, from the
// start (no server answering yet is no error: Connected says) and after a
// connection is lost. Without it a call fails at once. Errors: a bad URL
// or credentials file, ErrNoServers (wrapped with the URLs and why).
func Connect(s Settings, reconnect bool) (*Bus, error) {
	if s.Timeout <= 0 {
		s.Timeout = 5 * time.Second
	}
	urls, err := SplitURLs(s.URLs)
	if err != nil {
		return nil, err
	}
	// The servers' asynchronous refusals are kept (Refusal) and said by
	// the calls they made run out of time, not printed by the client.
	opts := []nats.Option{nats.Name(s.Name), nats.Timeout(s.Timeout), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}
	if s.PingInterval > 0 {
		opts = append(opts, nats.PingInterval(s.PingInterval))
	}
	switch {
	case s.Operator:
		opts = append(opts, nats.CustomInboxPrefix(AdminInbox))
	case s.Node != "":
		opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(s.Node)))
	}
	if reconnect {
		opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(time.Second), nats.RetryOnFailedConnect(true))
	} else {
		opts = append(opts, nats.NoReconnect())
	}
	if s.Creds != "" {
		opt, err := credsOption(s.Creds)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNoServers, wire.RedactURLs(s.URLs), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Bus{nc: nc, js: js, timeout: s.Timeout, creds: s.Creds != ""}, nil
}

// Refusal is the servers' last refusal of something this connection did
// (a permissions violation: a subject its credentials do not allow; an
// authorization violation: credentials they do not take), nil when none.
func (b *Bus) Refusal() error {
	last := b.nc.LastError()
	if last == nil {
		return nil
	}
	s := strings.ToLower(last.Error())
	if errors.Is(last, nats.ErrPermissionViolation) || errors.Is(last, nats.ErrAuthorization) ||
		strings.Contains(s, "permissions violation") || strings.Contains(s, "authorization violation") {
		return last
	}
	return nil
}

// refused is err, a call that ran out of time, with the servers' refusal
// (Refusal) when there is one: a machine with another node's credentials,
// or a name its credentials are not for, is told so, not that a server
// did not answer in time.
func (b *Bus) refused(err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return err
	}
	if last := b.Refusal(); last != nil {
		return fmt.Errorf("%w: the servers refused it: %w (are this node's name and its credentials the same node's? docs/FLEET.md)", err, last)
	}
	return err
}

// Connected reports whether a server answers now.
func (b *Bus) Connected() bool { return b.nc.IsConnected() }

// Close ends the connection, flushing what was published.
func (b *Bus) Close() {
	_ = b.nc.FlushTimeout(b.timeout)
	b.nc.Close()
}

// SplitURLs splits a comma-separated server list, each a nats://, tls://
// (TLS required), ws:// or wss:// URL, or a bare HOST:PORT (nats://).
// Errors (each naming the entry, its password redacted): an empty list
// or entry, a scheme NATS does not speak, an entry that does not parse as
// a URL (a control character, an unclosed "["), no host, a port that is
// not 1 to 65535 (none is the scheme's default).
func SplitURLs(s string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(s, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			return nil, fmt.Errorf("NATS servers %q: an empty entry (want URL[,URL...], such as nats://127.0.0.1:4222)", wire.RedactURLs(s))
		}
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("NATS server %q: %w (want such as nats://127.0.0.1:4222)", wire.RedactURLs(u), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// checkURL refuses a server URL (or bare HOST:PORT) that NATS cannot
// dial: its errors never quote it.
func checkURL(u string) error {
	full := u
	scheme, _, ok := strings.Cut(u, "://")
	if !ok {
		full = "nats://" + u
	} else {
		switch scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("scheme %q (want nats://, tls://, ws:// or wss://)", scheme)
		}
	}
	p, err := url.Parse(full)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message quotes the URL
		}
		return fmt.Errorf("not a URL: %w", err)
	}
	if p.Hostname() == "" {
		return errors.New("no host")
	}
	if port := p.Port(); port != "" || strings.HasSuffix(p.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not 1 to 65535", port)
		}
	}
	return nil
}

// credsOption is the option for a credentials file: a user JWT with its
// seed (the .creds file nsc writes: it holds "BEGIN NATS USER JWT"), or
// an nkey seed file alone ("SU..."), read once. Errors name the file,
// never what it holds: one that cannot be read, one that is neither.
func credsOption(path string) (nats.Option, error) {
	b, _, err := readSecret(path)
	if err != nil {
		return nil, fmt.Errorf("NATS credentials: %w", err)
	}
	return credsFrom(path, b)
}

// credsFrom is credsOption of the file path holding b.
func credsFrom(path string, b []byte) (nats.Option, error) {
	bad := func(err error) (nats.Option, error) {
		return nil, fmt.Errorf("NATS credentials %s: neither a .creds file (nsc's: a user JWT and its seed) nor an nkey seed file: %w", path, err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	if err != nil {
		return bad(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return bad(err)
	}
	if bytes.Contains(b, []byte("BEGIN NATS USER JWT")) {
		jwt, err := nkeys.ParseDecoratedJWT(b)
		if err == nil && strings.Count(jwt, ".") != 2 {
			err = errors.New("its JWT is no JWT")
		}
		if err != nil {
			return bad(err)
		}
		return nats.UserJWTAndSeed(jwt, string(seed)), nil
	}
	public, err := kp.PublicKey()
	if err != nil {
		return bad(err)
	}
	return nats.Nkey(public, kp.Sign), nil
}

// MaxSecretBytes bounds a credentials or nkey seed file (a .creds file
// is about 1 KiB).
const MaxSecretBytes = 64 << 10

// readSecret is the content and mode of the credentials or seed file
// path: a regular file (symbolic links followed) of at most MaxSecretBytes. It is
// opened without blocking and checked before it is read, so a FIFO or a
// device (/dev/zero) is refused at once, never read. Errors wrap
// fs.ErrNotExist for a missing file; none holds the content.
func readSecret(path string) ([]byte, fs.FileMode, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretBytes+1))
	if err == nil && len(b) > MaxSecretBytes {
		err = fmt.Errorf("%s is over %d bytes: no credentials or seed file", path, MaxSecretBytes)
	}
	return b, fi.Mode(), err
}

// CheckCreds refuses a credentials file Connect could not use: one that
// cannot be read (readSecret: missing, not a regular file, too big), or that is neither a .creds file nor an nkey seed file
// (credsOption). The error names the file, never what it holds.
func CheckCreds(path string) error {
	_, err := credsOption(path)
	return err
}

// presence is the presence bucket. With create (a service joining), its
// stream is checked (checkStream) and, on an open bus, made when missing
// (makePresence); under credentials a missing one is ErrNotSetUp.
func (b *Bus) presence(ctx context.Context, create bool) (jetstream.KeyValue, error) {
	if !create {
		return b.js.KeyValue(ctx, PresenceBucket)
	}
	if b.creds {
		err := b.checkPresence(ctx)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, notSetUp("the presence bucket " + PresenceBucket)
		}
		if err != nil {
			return nil, err
		}
		return b.js.KeyValue(ctx, PresenceBucket)
	}
	return b.makePresence(ctx)
}

// makePresence is PresenceBucket, its stream checked (checkStream), or
// created when missing (replicated: R3, R1 only where the cluster has
// fewer servers).
func (b *Bus) makePresence(ctx context.Context) (jetstream.KeyValue, error) {
	err := b.checkPresence(ctx)
	if err == nil {
		return b.js.KeyValue(ctx, PresenceBucket)
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, err
	}
	cfg := presenceConfig()
	var kv jetstream.KeyValue
	err = replicated(func(replicas int) error {
		cfg.Replicas = replicas
		kv, err = b.js.CreateKeyValue(ctx, cfg)
		return err
	})
	if errors.Is(err, jetstream.ErrBucketExists) { // another node made it meanwhile
		if err = b.checkPresence(ctx); err != nil {
			return nil, err
		}
		return b.js.KeyValue(ctx, PresenceBucket)
	}
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		return nil, fmt.Errorf("the NATS server is older than 2.11 (it has no KV limit markers, which presence uses): %w", err)
	}
	return kv, err
}

// Replicas is how many servers keep the presence bucket and the mail
// stream when peerctl makes them: 3, so that one server's death loses
// nothing and they still take writes.
const Replicas = 3

// fewerServers are the JetStream API error codes (nats-server's
// server/jetstream_errors_generated.go) that mean the servers cannot hold
// Replicas copies, so one copy is made instead: JSStreamReplicasNotSupportedErr
// (10074, "replicas > 1 not supported in non-clustered mode": a single
// server), JSClusterNoPeersErrF (10005, "no suitable peers for placement":
// a cluster of fewer servers, or too few of them up) and
// JSInsufficientResourcesErr (10023, "insufficient resources").
var fewerServers = []jetstream.ErrorCode{10074, 10005, 10023}

// replicated runs create with Replicas, and again with 1 only when the
// servers answered that they are too few for Replicas (fewerServers).
// Any other error (a permission refused, JetStream not answering now, an
// election under way, a stream already there) is create's, returned as it
// is: a stream made with one copy is never made so by accident.
func replicated(create func(replicas int) error) error {
	err := create(Replicas)
	var api *jetstream.APIError
	if errors.As(err, &api) && slices.Contains(fewerServers, api.ErrorCode) {
		return create(1)
	}
	return err
}
