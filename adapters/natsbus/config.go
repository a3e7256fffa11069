package natsbus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// Who may do what on the bus: each node has its own credentials (an nkey:
// its seed stays on its machine), and the servers let a node
//
//   - publish its own presence only ($KV.peerctl_presence.<node>), and read
//     every node's (the bucket's stream, by the JetStream API calls a
//     KV watch, get and put make: no purge, no delete of a stream or a
//     message);
//   - take only its own requests (subscribe peerctl.v1.req.<node>.*) and
//     read only its own replies (_INBOX.peerctl.<node>.>, its InboxPrefix);
//   - make requests to any node, as itself only (publish
//     peerctl.v1.req.*.<node>): the sender a service sees in a request's
//     subject is the one the servers let make it, so its trust policy's
//     entrance node:<node> names a machine, not a claim;
//   - answer the requests it took (allow_responses: once, to the reply
//     subject of each);
//   - put durable mail in any node's inbox and receipts for any node, as
//     itself only (peerctl.v1.inbox.*.<node>, peerctl.v1.receipts.*.<node>),
//     and read only its own inbox and its own receipts: the mail stream's
//     two consumers of its name, created with its own filter only, and
//     their next-message and ack subjects (mailPermissions); no stream
//     message get, purge or delete;
//   - make, change, purge or delete neither the mail stream nor the
//     presence bucket (setup.go): the operator's key (AdminKey) makes
//     them, and may do nothing else (AdminPermissions).
//
// ServerConfig writes that as a nats-server configuration (an
// authorization block of users, in the global account, JetStream on);
// NodeKey makes and keeps each node's seed.

// NodeKey is node's nkey in dir: the public key of its seed file
// dir/NODE.nk, made (0600, in a 0700 dir) when there is none; made says
// so. The seed file is what that node's machine gives as --nats-creds
// (or $PEERCTL_NATS_CREDS). Errors: a bad node name, a file that cannot
// be read (readSecret: not a regular file, too big) or written, one its
// group or others may read or write (refused as ssh refuses such a
// private key), a file that holds no user seed.
func NodeKey(dir, node string) (public string, made bool, err error) {
	if _, err := domain.ParseNode(node); err != nil {
		return "", false, err
	}
	return seedKey(dir, node+".nk", "node "+node+"'s")
}

// AdminKey is the operator's nkey in dir (dir/wire.AdminKeyFile), as NodeKey:
// the key `peerctl policy nats-setup` makes the fleet's streams with
// (AdminPermissions). Errors: NodeKey's.
func AdminKey(dir string) (public string, made bool, err error) {
	return seedKey(dir, wire.AdminKeyFile, "the operator's")
}

// seedKey is the public key of the seed file dir/name, whose's (say
// "node alpha's"), made when missing (NodeKey).
func seedKey(dir, name, whose string) (public string, made bool, err error) {
	path := filepath.Join(dir, name)
	seed, mode, err := readSecret(path)
	if err == nil && mode.Perm()&0o077 != 0 && runtime.GOOS != "windows" {
		return "", false, fmt.Errorf("%s key %s is open to others (%s): a seed its group or others may read is refused, as ssh refuses such a key; chmod 600 %s, or remove it and make it anew", whose, path, mode.Perm(), path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return "", false, fmt.Errorf("make %s key: %w", whose, err)
		}
		if seed, err = kp.Seed(); err != nil {
			return "", false, fmt.Errorf("make %s key: %w", whose, err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", false, fmt.Errorf("keys folder: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, fmt.Errorf("%s key: %w", whose, err)
		}
		_, err = f.Write(append(seed, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", false, fmt.Errorf("%s key: %w", whose, err)
		}
		made = true
	} else if err != nil {
		return "", false, fmt.Errorf("%s key: %w", whose, err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return "", false, fmt.Errorf("%s key %s: not an nkey seed: %w", whose, path, err)
	}
	public, err = kp.PublicKey()
	if err == nil && !nkeys.IsValidPublicUserKey(public) {
		err = errors.New("not a user's key (its seed starts with SU)")
	}
	if err != nil {
		return "", false, fmt.Errorf("%s key %s: %w", whose, path, err)
	}
	return public, made, nil
}

// NodeUser is one node's user in ServerConfig: its name and its nkey's
// public key (NodeKey).
type NodeUser struct {
	Node, PublicKey string
}

// Permissions are the subjects node may publish to and subscribe to (see
// the package's "Who may do what"): nats-server's permissions, its
// responses allowed besides.
func Permissions(node string) (publish, subscribe []string) {
	t := Token(node)
	stream := "KV_" + PresenceBucket
	publish = []string{
		"peerctl.v1.req.*." + t,
		"$KV." + PresenceBucket + "." + node,
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.DIRECT.GET." + stream,
		"$JS.API.DIRECT.GET." + stream + ".>",
		"$JS.API.CONSUMER.CREATE." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.INFO." + stream + ".>",
		"$JS.API.CONSUMER.DELETE." + stream + ".>",
		"$JS.FC." + stream + ".>",
	}
	publish = append(publish, mailPermissions(node)...)
	subscribe = []string{RequestSubject(node, "*"), InboxPrefix(node) + ".>"}
	return publish, subscribe
}

// AdminInbox is the operator's connection's reply subjects' prefix
// (Settings.Operator): the only subjects it may subscribe to.
const AdminInbox = "_INBOX.peerctl_admin"

// AdminPermissions are the subjects the operator's key (AdminKey) may
// publish to: make, read, change and delete the mail stream and the
// presence bucket's stream, nothing else (no message of either); it
// subscribes to its own replies only (AdminInbox).
func AdminPermissions() (publish, subscribe []string) {
	publish = []string{"$JS.API.INFO"}
	for _, s := range []string{MailStream, PresenceStream} {
		for _, op := range []string{"CREATE", "UPDATE", "INFO", "DELETE"} {
			publish = append(publish, "$JS.API.STREAM."+op+"."+s)
		}
	}
	return publish, []string{AdminInbox + ".>"}
}

// ServerConfig is a nats-server configuration fragment giving each of
// users its own permissions (Permissions), by its nkey, and the operator
// (admin, AdminKey's public key) AdminPermissions: an authorization block
// to include in the servers' configuration (every server of the cluster
// the same), beside `jetstream {}`. Nodes not named in it cannot connect.
// Errors: a bad node name, a node twice, a key that is not a user's.
func ServerConfig(admin string, users []NodeUser) (string, error) {
	var b strings.Builder
	b.WriteString("# peerctl's fleet: one user per node, each with its own nkey (docs/FLEET.md).\n")
	b.WriteString("# Include it in every server's configuration, beside jetstream {}:  include peerctl-fleet.conf\n")
	b.WriteString("authorization {\n  users = [\n")
	if !nkeys.IsValidPublicUserKey(admin) {
		return "", fmt.Errorf("the operator: %q is not a user's public nkey", admin)
	}
	pub, sub := AdminPermissions()
	fmt.Fprintf(&b, "    # the operator (%s): makes the fleet's streams, peerctl policy nats-setup\n    {\n      nkey: %s\n      permissions: {\n", wire.AdminKeyFile, admin)
	fmt.Fprintf(&b, "        publish: { allow: [%s] }\n", quoted(pub))
	fmt.Fprintf(&b, "        subscribe: { allow: [%s] }\n      }\n    }\n", quoted(sub))
	seen := map[string]bool{}
	for _, u := range users {
		if _, err := domain.ParseNode(u.Node); err != nil {
			return "", err
		}
		if seen[u.Node] {
			return "", fmt.Errorf("node %s named twice", u.Node)
		}
		seen[u.Node] = true
		if !nkeys.IsValidPublicUserKey(u.PublicKey) {
			return "", fmt.Errorf("node %s: %q is not a user's public nkey", u.Node, u.PublicKey)
		}
		pub, sub := Permissions(u.Node)
		fmt.Fprintf(&b, "    # node %s\n    {\n      nkey: %s\n      permissions: {\n", u.Node, u.PublicKey)
		fmt.Fprintf(&b, "        publish: { allow: [%s] }\n", quoted(pub))
		fmt.Fprintf(&b, "        subscribe: { allow: [%s] }\n", quoted(sub))
		b.WriteString("        allow_responses: true\n      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

// quoted are subjects as a configuration's list: each in double quotes
// (a node's name and the subjects hold no quote or backslash).
func quoted(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = `"` + s + `"`
	}
	return strings.Join(q, ", ")
}

// mailPermissions are the JetStream subjects node publishes to for its
// durable mail (mail.go): its own mail and receipts out, the mail
// stream's configuration read (checkStream), and its two consumers, each with its own filter in
// the create subject (the servers check that the filter is the
// consumer's), read and acknowledged.
func mailPermissions(node string) []string {
	api := "$JS.API."
	out := []string{InboxSubject("*", node), ReceiptsSubject("*", node),
		api + "STREAM.INFO." + MailStream}
	for _, c := range []struct{ name, filter string }{{InboxConsumer(node), InboxSubject(node, "*")}, {ReceiptsConsumer(node), ReceiptsSubject(node, "*")}} {
		out = append(out, api+"CONSUMER.CREATE."+MailStream+"."+c.name+"."+c.filter, api+"CONSUMER.INFO."+MailStream+"."+c.name,
			api+"CONSUMER.MSG.NEXT."+MailStream+"."+c.name, "$JS.ACK."+MailStream+"."+c.name+".>")
	}
	return out
}
