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
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// MaxNodes bounds how many nodes one fleet listing reads; more are left
// out with a warning.
const MaxNodes = 10000

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
	opts := []nats.Option{nats.Name(s.Name), nats.Timeout(s.Timeout)}
	if s.PingInterval > 0 {
		opts = append(opts, nats.PingInterval(s.PingInterval))
	}
	if s.Node != "" {
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
		return nil, fmt.Errorf("%w at %s: %w", ErrNoServers, strings.Join(urls, ","), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Bus{nc: nc, js: js, timeout: s.Timeout}, nil
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
// Errors: an empty list or entry, a scheme NATS does not speak.
func SplitURLs(s string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(s, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			return nil, fmt.Errorf("NATS servers %q: an empty entry (want URL[,URL...], such as nats://127.0.0.1:4222)", s)
		}
		if scheme, _, ok := strings.Cut(u, "://"); ok {
			switch scheme {
			case "nats", "tls", "ws", "wss":
			default:
				return nil, fmt.Errorf("NATS server %q: scheme %q (want nats://, tls://, ws:// or wss://)", u, scheme)
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// credsOption is the option for a credentials file: a user JWT with its
// seed (the .creds file nsc writes: it holds "BEGIN NATS USER JWT"), or
// an nkey seed file alone. Errors: a file that cannot be read.
func credsOption(path string) (nats.Option, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NATS credentials: %w", err)
	}
	if bytes.Contains(b, []byte("BEGIN NATS USER JWT")) {
		return nats.UserCredentials(path), nil
	}
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("NATS credentials %s: neither a .creds file nor an nkey seed: %w", path, err)
	}
	return opt, nil
}

// presence is the presence bucket, created (R3 where the cluster has
// three servers, else R1) when create is set and it does not exist.
func (b *Bus) presence(ctx context.Context, create bool) (jetstream.KeyValue, error) {
	kv, err := b.js.KeyValue(ctx, PresenceBucket)
	if err == nil || !create || !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	cfg := jetstream.KeyValueConfig{Bucket: PresenceBucket, Description: "peerctl: each node's live sessions (docs/FLEET.md)",
		MaxValueSize: MaxDocBytes, History: 1, TTL: bucketTTL, LimitMarkerTTL: bucketTTL, Storage: jetstream.FileStorage, Replicas: 3}
	kv, err = b.js.CreateKeyValue(ctx, cfg)
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) && !errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		cfg.Replicas = 1 // a single server, or a cluster of fewer than three
		kv, err = b.js.CreateKeyValue(ctx, cfg)
	}
	if errors.Is(err, jetstream.ErrBucketExists) {
		return b.js.KeyValue(ctx, PresenceBucket) // another node made it meanwhile
	}
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		return nil, fmt.Errorf("the NATS server is older than 2.11 (it has no KV limit markers, which presence uses): %w", err)
	}
	return kv, err
}
