package natsbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/ports/wire"
)

// The fleet's two streams, MailStream and the presence bucket's
// (PresenceStream), are each made once, and whoever makes a stream
// chooses its whole configuration: its subjects, where it republishes
// what it stores, what it copies from. So a node's credentials
// (Permissions) may not make, change or delete either: the operator's
// key (AdminKey, the user ServerConfig names AdminUser) makes them with
// Setup (`peerctl policy nats-setup`). On an open bus (no credentials) a
// service still makes a missing one itself. Every service checks the
// stream it finds (checkStream) and refuses one that is not peerctl's
// (ErrTampered): a stream made on an open bus by someone else, or with a
// leaked operator's key, that copies the nodes' mail elsewhere.

// PresenceStream is the stream that holds PresenceBucket.
const PresenceStream = "KV_" + PresenceBucket

// ErrNotSetUp is wrapped by a service's error when a stream is missing
// and its credentials may not make it.
var ErrNotSetUp = errors.New("not set up on the bus")

// ErrTampered is wrapped by the error of a stream whose configuration is
// not peerctl's.
var ErrTampered = errors.New("not peerctl's configuration")

// setupHint is what to run when a stream is missing.
const setupHint = "the operator makes it once with the operator's key: peerctl policy nats-setup --nats URL --nats-creds KEYS/" + wire.AdminKeyFile + " (docs/FLEET.md)"

// mailStreamConfig is MailStream as peerctl makes it (R3; R1 where the
// cluster has fewer than three servers).
func mailStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: MailStream, Description: "peerctl: durable mail between nodes and its receipts (docs/FLEET.md)",
		Subjects: []string{InboxSubject("*", "*"), ReceiptsSubject("*", "*")}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Replicas: Replicas, MaxAge: MailMaxAge, MaxMsgSize: wire.MaxMailBytes, Duplicates: 2 * time.Minute}
}

// presenceConfig is PresenceBucket as peerctl makes it.
func presenceConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: PresenceBucket, Description: "peerctl: each node's live sessions (docs/FLEET.md)",
		MaxValueSize: MaxDocBytes, History: 1, TTL: bucketTTL, LimitMarkerTTL: bucketTTL, Storage: jetstream.FileStorage, Replicas: Replicas}
}

// checkStream refuses got, the configuration of stream name as found on
// the bus, when it is not peerctl's or weaker than want's: other
// subjects, another retention or storage, a republish, a mirror, sources
// or a subject transform, a shorter age (or, for the presence bucket, a
// longer or no TTL: dead nodes would never drop out), message or byte
// limits, smaller messages, a shorter de-duplication window, sealed.
// The error wraps ErrTampered and names every field that differs.
func checkStream(name string, got, want jetstream.StreamConfig) error {
	var bad []string
	add := func(f string, args ...any) { bad = append(bad, fmt.Sprintf(f, args...)) }
	if g, w := slices.Sorted(slices.Values(got.Subjects)), slices.Sorted(slices.Values(want.Subjects)); !slices.Equal(g, w) {
		add("subjects %q, not %q", g, w)
	}
	if got.Retention != want.Retention {
		add("retention %s, not %s", got.Retention, want.Retention)
	}
	if got.Storage != want.Storage {
		add("storage %s, not %s", got.Storage, want.Storage)
	}
	if got.RePublish != nil {
		add("a republish of %q to %q", got.RePublish.Source, got.RePublish.Destination)
	}
	if got.Mirror != nil {
		add("a mirror of %s", got.Mirror.Name)
	}
	if len(got.Sources) > 0 {
		add("%d sources", len(got.Sources))
	}
	if got.SubjectTransform != nil {
		add("a subject transform of %q to %q", got.SubjectTransform.Source, got.SubjectTransform.Destination)
	}
	switch {
	case want.Retention == jetstream.LimitsPolicy && (got.MaxAge <= 0 || got.MaxAge > want.MaxAge):
		add("max age %s, not %s", got.MaxAge, want.MaxAge)
	case want.Retention != jetstream.LimitsPolicy && got.MaxAge > 0 && got.MaxAge < want.MaxAge:
		add("max age %s, under %s", got.MaxAge, want.MaxAge)
	}
	if got.MaxMsgs > 0 {
		add("at most %d messages", got.MaxMsgs)
	}
	if got.MaxBytes > 0 {
		add("at most %d bytes", got.MaxBytes)
	}
	if want.MaxMsgsPerSubject <= 0 && got.MaxMsgsPerSubject > 0 {
		add("at most %d messages a subject", got.MaxMsgsPerSubject)
	}
	if got.MaxMsgSize > 0 && got.MaxMsgSize < want.MaxMsgSize {
		add("messages of at most %d bytes, under %d", got.MaxMsgSize, want.MaxMsgSize)
	}
	if got.Duplicates < want.Duplicates {
		add("a de-duplication window of %s, under %s", got.Duplicates, want.Duplicates)
	}
	if got.Sealed {
		add("sealed")
	}
	if len(bad) > 0 {
		return fmt.Errorf("stream %s on the bus is %w: %s; refused (it may copy the nodes' messages elsewhere): the operator deletes it and runs peerctl policy nats-setup (docs/FLEET.md)", name, ErrTampered, strings.Join(bad, "; "))
	}
	return nil
}

// wantPresence is the presence bucket's stream as peerctl makes it, as
// checkStream compares it.
func wantPresence() jetstream.StreamConfig {
	c := presenceConfig()
	return jetstream.StreamConfig{Subjects: []string{"$KV." + PresenceBucket + ".>"}, Retention: jetstream.LimitsPolicy, Storage: c.Storage,
		MaxAge: c.TTL, MaxMsgsPerSubject: int64(c.History), MaxMsgSize: c.MaxValueSize, Duplicates: min(2*time.Minute, c.TTL)}
}

// checkPresence checks the presence bucket's stream as it is on the bus
// (checkStream): ErrBucketNotFound when there is none.
func (b *Bus) checkPresence(ctx context.Context) error {
	s, err := b.js.Stream(ctx, PresenceStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return jetstream.ErrBucketNotFound
	}
	if err != nil {
		return err
	}
	return checkStream(PresenceStream, s.CachedInfo().Config, wantPresence())
}

// notOperator is what Setup adds to an error that is not a tampered
// stream: the servers answer a request they do not permit with none, so
// a node's key (not the operator's) fails as a time-out would.
func notOperator(err error) string {
	if errors.Is(err, ErrTampered) {
		return ""
	}
	return " (is this the operator's key, KEYS/" + wire.AdminKeyFile + "? a node's may not make the fleet's streams)"
}

// notSetUp is the error of stream what, missing where the credentials may
// not make it.
func notSetUp(what string) error {
	return fmt.Errorf("%s is %w, and a node's credentials may not make it: %s", what, ErrNotSetUp, setupHint)
}

// Setup makes the fleet's mail stream and presence bucket when missing
// and checks them when there (checkStream), as the operator's step: run
// with the operator's key (AdminKey), or on an open bus. made names what
// it made; found what was there and is peerctl's. Errors: a stream that
// is not peerctl's (ErrTampered), one the credentials may not make or
// read, a bus that does not answer.
func (b *Bus) Setup(ctx context.Context) (made, found []string, err error) {
	for _, st := range []struct {
		what, stream string
		make         func(context.Context) error
	}{
		{"stream " + MailStream, MailStream, func(ctx context.Context) error { _, err := b.makeMailStream(ctx); return err }},
		{"bucket " + PresenceBucket, PresenceStream, func(ctx context.Context) error { _, err := b.makePresence(ctx); return err }},
	} {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		_, there := b.js.Stream(ctx, st.stream)
		err := st.make(ctx)
		cancel()
		switch {
		case err != nil:
			return made, found, fmt.Errorf("%s: %w%s", st.what, err, notOperator(err))
		case errors.Is(there, jetstream.ErrStreamNotFound):
			made = append(made, st.what)
		default:
			found = append(found, st.what)
		}
	}
	return made, found, nil
}
