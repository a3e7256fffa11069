// Package outbox is peerctl serve's durable outbox: one SQLite file
// (modernc.org/sqlite, pure Go, so CGO_ENABLED=0 builds and
// cross-compiles keep working) in WAL mode, its schema versioned by
// PRAGMA user_version with forward-only migrations. The file is opened,
// checked (PRAGMA integrity_check) and used; it is never truncated,
// replaced or deleted by peerctl, whatever state it is found in: a store
// that cannot be used is reported and left for a person to look at.
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/peerctl/peerctl/adapters/servesock"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

var _ ports.Outbox = (*Store)(nil)

// FileName is the outbox file's name in the state folder (servesock.StateDir).
const FileName = servesock.OutboxName

// step takes the file one schema version forward, inside the
// transaction that also sets PRAGMA user_version: all of it or none. o is
// Open's settings (a step that rewrites requests needs the caller's
// encoding).
type step func(ctx context.Context, tx *sql.Tx, o options) error

// sqlStep is a step that runs statements q.
func sqlStep(q string) step {
	return func(ctx context.Context, tx *sql.Tx, _ options) error {
		_, err := tx.ExecContext(ctx, q)
		return err
	}
}

// migrations are the schema, one step per version: migrations[i] takes
// the file from user_version i to i+1. Steps are only ever added, at the
// end (a step that rewrites rows in Go is a step like the others).
var migrations = []step{
	sqlStep(`CREATE TABLE messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		key TEXT UNIQUE,
		address TEXT NOT NULL,
		text TEXT NOT NULL,
		request BLOB NOT NULL,
		state TEXT NOT NULL,
		reason TEXT NOT NULL DEFAULT '',
		created_ns INTEGER NOT NULL,
		expires_ns INTEGER NOT NULL,
		next_ns INTEGER NOT NULL DEFAULT 0,
		updated_ns INTEGER NOT NULL,
		attempts INTEGER NOT NULL DEFAULT 0,
		session_id TEXT NOT NULL DEFAULT '',
		transcript TEXT NOT NULL DEFAULT '',
		attempt_ns INTEGER NOT NULL DEFAULT 0,
		outcome TEXT NOT NULL DEFAULT '',
		transport TEXT NOT NULL DEFAULT '',
		msg_id TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX messages_due ON messages(state, next_ns);
	CREATE TABLE history (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		message_id INTEGER NOT NULL REFERENCES messages(id),
		at_ns INTEGER NOT NULL,
		state TEXT NOT NULL,
		reason TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX history_message ON history(message_id, id);`),
	// 2: the machine a message is for (send --durable --host), "" for this one.
	sqlStep(`ALTER TABLE messages ADD COLUMN host TEXT NOT NULL DEFAULT '';`),
	// 3: each request is a typed send order, no longer the sender's command
	// line and whole environment (upgradeRequests; the file is then
	// vacuumed and its WAL checkpointed, so the old bytes are gone).
	upgradeRequests,
	// 4: every try counted (the backoff's), a history line folding the
	// repeats of its state and reason (count, the last time), and the
	// index the pruning of finished messages reads.
	sqlStep(`ALTER TABLE messages ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
	UPDATE messages SET tries = attempts;
	ALTER TABLE history ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
	ALTER TABLE history ADD COLUMN last_ns INTEGER NOT NULL DEFAULT 0;
	UPDATE history SET last_ns = at_ns;
	CREATE INDEX messages_updated ON messages(updated_ns);`),
	// 5: who sent each message (the trust policy's sender: entrance,
	// DEST or node, sending session's name and id), the rule that held
	// it, and who approved it.
	sqlStep(`ALTER TABLE messages ADD COLUMN sender_entrance TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN sender_where TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN sender_session TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN sender_session_id TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN rule TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN approved_by TEXT NOT NULL DEFAULT '';`),
	// 6: how many times each message was retried (outbox retry; for a
	// message another node put here, its sender's retries applied), and
	// the service's marks (the change number up to which the receipts of
	// messages taken from the fleet's bus were published).
	sqlStep(`ALTER TABLE messages ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE marks (name TEXT PRIMARY KEY, seq INTEGER NOT NULL);`),
	// 7: the time to live each message was stored with, which a retry
	// renews (before, the time from its creation to its last expiry: a
	// message retried before this step keeps what that had grown to).
	sqlStep(`ALTER TABLE messages ADD COLUMN ttl_ns INTEGER NOT NULL DEFAULT 0;
	UPDATE messages SET ttl_ns = expires_ns - created_ns;`),
}

// scrubbed are the versions whose step removes bytes that must not stay
// in the file: after them the file is vacuumed and its WAL truncated.
var scrubbed = map[int]bool{3: true}

// Option is an Open setting.
type Option func(*options)

type options struct {
	upgrade func(request []byte) ([]byte, error)
}

// WithRequestUpgrade gives the migration to schema 3 the caller's
// encoding of a request: upgrade turns a schema-2 request (the JSON
// {"argv": [...], "env": [...]} peerctl serve stored) into the caller's
// request, keeping no environment. A request it cannot turn (an error) is
// stored empty, and its message kept. Without it every schema-2 request
// is stored empty.
func WithRequestUpgrade(upgrade func(request []byte) ([]byte, error)) Option {
	return func(o *options) { o.upgrade = upgrade }
}

// upgradeRequests rewrites every message's request with o.upgrade: what a
// schema-2 file stored (the sender's command line and environment) is
// replaced, so no environment stays in the table.
func upgradeRequests(ctx context.Context, tx *sql.Tx, o options) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, request FROM messages`)
	if err != nil {
		return err
	}
	type row struct {
		id  int64
		req []byte
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.req); err != nil {
			_ = rows.Close()
			return err
		}
		all = append(all, r)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, r := range all {
		req := []byte{}
		if o.upgrade != nil {
			if got, err := o.upgrade(r.req); err == nil {
				req = got
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET request = ? WHERE id = ?`, req, r.id); err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// Store is the outbox over one SQLite file. Build it with Open (the one
// writer) or OpenReadOnly (list and show while serve runs, or without it).
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool
	// unfolded is a file read before schema 4 (OpenReadOnly while the
	// service has not migrated it yet): no tries, no folded history.
	unfolded bool
	// unsent is a file read before schema 5: no sender, rule or approver.
	unsent bool
	// unretried is a file read before schema 6: no retries counted.
	unretried bool
	// untimed is a file read before schema 7: the time to live is the
	// time from creation to expiry.
	untimed bool
	// blank is a file read before its schema exists (OpenReadOnly at
	// version 0): every read finds nothing.
	blank bool
}

// columns are a message's columns as this file has them: before schema
// 4, the hand-overs stand for the tries.
func (s *Store) columns() string {
	c := columns
	if s.unfolded {
		c = strings.Replace(c, "tries", "attempts", 1)
	}
	if s.unsent {
		c = strings.Replace(c, senderColumns, "'', '', '', '', '', ''", 1)
	}
	if s.unretried {
		c = strings.Replace(c, ", retries", ", 0", 1)
	}
	if s.untimed {
		c = strings.Replace(c, ", ttl_ns", ", expires_ns - created_ns", 1)
	}
	return c
}

// folded are a history line's first time, last time and count (with the
// table's prefix p) as this file has them: before schema 4 each line is
// one change.
func (s *Store) folded(p string) string {
	if s.unfolded {
		return p + "at_ns, " + p + "at_ns, 1"
	}
	return p + "at_ns, " + p + "last_ns, " + p + "count"
}

// Error is why the outbox cannot be used: Path is the file, Op what was
// being done ("open", "check", "migrate", "store"...). The file is left as
// it was.
type Error struct {
	Path string
	Op   string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("outbox %s %s: %v (the file is kept as it is)", e.Path, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Open opens (creating it 0600 and its 0700 folder when absent) the
// outbox file path for writing, checks it with PRAGMA integrity_check,
// switches it to WAL and migrates its schema to SchemaVersion. Its folder
// is checked as the service socket's is (servesock.PrivateDir: this
// user's, not a symlink, narrowed to the owner's bits when wider), and
// so are the file, its WAL and its shared-memory file (0644 left by an
// older peerctl becomes 0600; SQLite makes the WAL and SHM with the
// file's mode). A folder or file that is a symlink or another user's, a
// file that is not an SQLite database, fails the check, has a newer
// schema than this build's, or sits in a folder that cannot be written is
// an *Error, and the file's content is not changed.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := private(path); err != nil {
		return nil, &Error{Path: path, Op: "check its folder and files", Err: err}
	}
	s, err := open(ctx, path, false)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx, o); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	return s, nil
}

// private checks path's folder (creating it) and its files as Open says,
// and creates the file, empty (a new database to SQLite), 0600 when it
// is absent. Windows has no Unix modes to check: the folder is created.
func private(path string) error {
	dir := filepath.Dir(path)
	if err := servesock.PrivateDir(dir); errors.Is(err, servesock.ErrUnsupported) {
		return os.MkdirAll(dir, 0o700)
	} else if err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := servesock.PrivateFile(p); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// OpenReadOnly opens an existing outbox file for reading only. It does not
// create, check or migrate; a file with a newer schema is an *Error. A
// missing file is an *Error wrapping fs.ErrNotExist.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, &Error{Path: path, Op: "open", Err: err}
	}
	s, err := open(ctx, path, true)
	if err != nil {
		return nil, err
	}
	var v int
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		_ = s.db.Close()
		return nil, &Error{Path: path, Op: "read its schema version", Err: err}
	}
	if v > SchemaVersion {
		_ = s.db.Close()
		return nil, &Error{Path: path, Op: "read", Err: fmt.Errorf("schema version %d is newer than this peerctl's %d", v, SchemaVersion)}
	}
	s.unfolded, s.unsent, s.unretried, s.untimed = v < 4, v < 5, v < 6, v < 7
	// Version 0: the service has made the file and not yet its schema
	// (its first migration is one transaction): an outbox with nothing in
	// it, not a broken one.
	s.blank = v == 0
	return s, nil
}

func open(ctx context.Context, path string, readOnly bool) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_txlock", "immediate")
	if readOnly {
		q.Add("mode", "ro")
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, &Error{Path: path, Op: "open", Err: err}
	}
	db.SetMaxOpenConns(1) // one connection: one writer, and pragmas hold
	s := &Store{db: db, path: path, readOnly: readOnly}
	if readOnly {
		return s, nil
	}
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&check); err != nil {
		_ = db.Close()
		return nil, &Error{Path: path, Op: "check", Err: err}
	}
	if check != "ok" {
		_ = db.Close()
		return nil, &Error{Path: path, Op: "check", Err: fmt.Errorf("PRAGMA integrity_check says %q", check)}
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		_ = db.Close()
		return nil, &Error{Path: path, Op: "switch to WAL", Err: err}
	}
	if !strings.EqualFold(mode, "wal") {
		_ = db.Close()
		return nil, &Error{Path: path, Op: "switch to WAL", Err: fmt.Errorf("journal mode is %q", mode)}
	}
	return s, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Version is the file's schema version (PRAGMA user_version).
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, s.fail("read its schema version", err)
}

func (s *Store) migrate(ctx context.Context, o options) error {
	v, err := s.Version(ctx)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return &Error{Path: s.path, Op: "migrate", Err: fmt.Errorf("schema version %d is newer than this peerctl's %d", v, SchemaVersion)}
	}
	if v == SchemaVersion {
		return nil
	}
	if err := runSteps(ctx, s.db, v, o); err != nil {
		return s.fail(fmt.Sprintf("migrate from version %d to %d", v, SchemaVersion), err)
	}
	scrub := false
	for w := v + 1; w <= SchemaVersion && v > 0; w++ {
		scrub = scrub || scrubbed[w]
	}
	if scrub {
		return s.scrub(ctx)
	}
	return nil
}

// scrub rewrites the whole file (VACUUM, with secure_delete) and truncates
// its WAL, so that bytes a migration removed are in neither any more.
func (s *Store) scrub(ctx context.Context) error {
	for _, q := range []string{`PRAGMA secure_delete = ON`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return s.fail("migrate: "+q, err)
		}
	}
	return nil
}

// runSteps runs migrations[from:] and sets user_version to the last
// one's version, in one transaction: a reader (OpenReadOnly, while the
// service upgrades or makes the file) sees the file before every step
// or after all of them, never a schema between (a fresh file read at
// version 1 had no host column: "no such column: host").
func runSteps(ctx context.Context, db *sql.DB, from int, o options) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for v := from; v < len(migrations); v++ {
		if err := migrations[v](ctx, tx, o); err != nil {
			return fmt.Errorf("step to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations))); err != nil {
		return err
	}
	return tx.Commit()
}

// fail wraps err (nil stays nil) as an *Error for op.
func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Path: s.path, Op: op, Err: err}
}

// Close closes the file (a clean close folds the WAL back into it).
func (s *Store) Close() error { return s.db.Close() }

// senderColumns are the columns of schema 5 (a message's sender, the rule
// that held it, its approver).
const senderColumns = `sender_entrance, sender_where, sender_session, sender_session_id, rule, approved_by`

const columns = `id, COALESCE(key, ''), address, text, request, state, reason, created_ns, expires_ns, next_ns, updated_ns,
	attempts, tries, session_id, transcript, attempt_ns, outcome, transport, msg_id, host, ` + senderColumns + `, retries, ttl_ns`

func scanMessage(row interface{ Scan(...any) error }) (ports.OutboxMessage, error) {
	var m ports.OutboxMessage
	var state, entrance, where, name, id string
	var created, expires, next, updated, attempt, ttl int64
	err := row.Scan(&m.ID, &m.Key, &m.Address, &m.Text, &m.Request, &state, &m.Reason, &created, &expires, &next, &updated,
		&m.Attempts, &m.Tries, &m.SessionID, &m.Transcript, &attempt, &m.Outcome, &m.Transport, &m.MsgID, &m.Host,
		&entrance, &where, &name, &id, &m.Rule, &m.ApprovedBy, &m.Retries, &ttl)
	if err != nil {
		return m, err
	}
	m.TTL = time.Duration(ttl)
	if m.State, err = domain.ParseOutboxState(state); err != nil {
		return m, err
	}
	e, err := domain.ParseEntrance(entrance)
	if err != nil {
		return m, err
	}
	m.Sender = domain.NewSender(e, where).WithSession(name, id)
	m.Created, m.Expires, m.NextAt, m.Updated, m.AttemptAt = fromNS(created), fromNS(expires), fromNS(next), fromNS(updated), fromNS(attempt)
	return m, nil
}

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Put implements ports.Outbox.
func (s *Store) Put(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return m, false, s.fail("store a message", err)
	}
	defer func() { _ = tx.Rollback() }()
	if m.Key != "" {
		got, err := scanMessage(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM messages WHERE key = ?`, m.Key))
		switch {
		case err == nil:
			return got, false, nil
		case !errors.Is(err, sql.ErrNoRows):
			return m, false, s.fail("look up a key", err)
		}
	}
	var key any
	if m.Key != "" {
		key = m.Key
	}
	if m.Request == nil {
		m.Request = []byte{}
	}
	if m.State == 0 {
		m.State = domain.OutboxStored
	}
	m.Updated = m.Created
	e := m.Sender.Entrance().String()
	if m.Sender.Entrance() == domain.EntranceUnknown {
		e = ""
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO messages (key, address, host, text, request, state, reason, created_ns, expires_ns, next_ns, updated_ns,
		`+senderColumns+`, retries, ttl_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, key, m.Address, m.Host, m.Text, m.Request, m.State.String(), m.Reason,
		ns(m.Created), ns(m.Expires), ns(m.NextAt), ns(m.Created), e, m.Sender.Where(), m.Sender.SessionName(), m.Sender.SessionID(), m.Rule, m.ApprovedBy, m.Retries, ns(m.Expires)-ns(m.Created))
	if err != nil {
		return m, false, s.fail("store a message", err)
	}
	if m.ID, err = res.LastInsertId(); err != nil {
		return m, false, s.fail("store a message", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO history (message_id, at_ns, last_ns, state, reason) VALUES (?, ?, ?, ?, ?)`,
		m.ID, ns(m.Created), ns(m.Created), m.State.String(), m.Reason); err != nil {
		return m, false, s.fail("store a message", err)
	}
	if err := tx.Commit(); err != nil {
		return m, false, s.fail("store a message", err)
	}
	m.Created, m.Expires, m.NextAt, m.Updated = fromNS(ns(m.Created)), fromNS(ns(m.Expires)), fromNS(ns(m.NextAt)), fromNS(ns(m.Created))
	m.TTL = m.Expires.Sub(m.Created)
	return m, true, nil
}

// Get implements ports.Outbox.
func (s *Store) Get(ctx context.Context, id int64) (ports.OutboxMessage, []ports.OutboxEvent, error) {
	if s.blank {
		return ports.OutboxMessage{}, nil, fmt.Errorf("message %d: %w", id, ports.ErrNoMessage)
	}
	m, err := scanMessage(s.db.QueryRowContext(ctx, `SELECT `+s.columns()+` FROM messages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, nil, fmt.Errorf("message %d: %w", id, ports.ErrNoMessage)
	}
	if err != nil {
		return m, nil, s.fail("read a message", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+s.folded("")+`, state, reason FROM history WHERE message_id = ? ORDER BY id`, id)
	if err != nil {
		return m, nil, s.fail("read a history", err)
	}
	defer func() { _ = rows.Close() }()
	var hist []ports.OutboxEvent
	for rows.Next() {
		var at, last int64
		var state string
		var e ports.OutboxEvent
		if err := rows.Scan(&at, &last, &e.Count, &state, &e.Reason); err != nil {
			return m, nil, s.fail("read a history", err)
		}
		if e.State, err = domain.ParseOutboxState(state); err != nil {
			return m, nil, s.fail("read a history", err)
		}
		e.At, e.Last = fromNS(at), fromNS(last)
		hist = append(hist, e)
	}
	return m, hist, s.fail("read a history", rows.Err())
}

// List implements ports.Outbox.
func (s *Store) List(ctx context.Context, f ports.OutboxFilter) ([]ports.OutboxMessage, error) {
	where, args := selects(f)
	q := `SELECT ` + s.columns() + ` FROM messages WHERE ` + where + ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return s.query(ctx, "list messages", q, args...)
}

// Count implements ports.Outbox.
func (s *Store) Count(ctx context.Context, f ports.OutboxFilter) (int, error) {
	if s.blank {
		return 0, nil
	}
	where, args := selects(f)
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE `+where, args...).Scan(&n)
	return n, s.fail("count messages", err)
}

// selects is the condition (and its arguments) of the messages f
// selects, its Limit aside.
func selects(f ports.OutboxFilter) (string, []any) {
	q := `1=1`
	var args []any
	if len(f.States) > 0 {
		q += ` AND state IN (?` + strings.Repeat(`, ?`, len(f.States)-1) + `)`
		for _, st := range f.States {
			args = append(args, st.String())
		}
	}
	if f.Target != "" {
		q += ` AND (address = ? OR session_id = ?)`
		args = append(args, f.Target, f.Target)
	}
	if f.Key != "" {
		q += ` AND key = ?`
		args = append(args, f.Key)
	}
	if f.Before > 0 {
		q += ` AND id < ?`
		args = append(args, f.Before)
	}
	return q, args
}

func (s *Store) query(ctx context.Context, op, q string, args ...any) ([]ports.OutboxMessage, error) {
	if s.blank {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer func() { _ = rows.Close() }()
	var out []ports.OutboxMessage
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, s.fail(op, err)
		}
		out = append(out, m)
	}
	return out, s.fail(op, rows.Err())
}

// Events implements ports.Outbox.
func (s *Store) Events(ctx context.Context, after int64, limit int) ([]ports.OutboxEvent, error) {
	if s.blank {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT h.id, h.message_id, m.address, m.host, `+s.folded("h.")+`, h.state, h.reason
		FROM history h JOIN messages m ON m.id = h.message_id WHERE h.id > ? ORDER BY h.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, s.fail("read the history", err)
	}
	defer func() { _ = rows.Close() }()
	var out []ports.OutboxEvent
	for rows.Next() {
		var e ports.OutboxEvent
		var at, last int64
		var state string
		if err := rows.Scan(&e.Seq, &e.MessageID, &e.Address, &e.Host, &at, &last, &e.Count, &state, &e.Reason); err != nil {
			return nil, s.fail("read the history", err)
		}
		if e.State, err = domain.ParseOutboxState(state); err != nil {
			return nil, s.fail("read the history", err)
		}
		e.At, e.Last = fromNS(at), fromNS(last)
		out = append(out, e)
	}
	return out, s.fail("read the history", rows.Err())
}

// Prune implements ports.Outbox.
func (s *Store) Prune(ctx context.Context, states []domain.OutboxState, before time.Time) (int, error) {
	if len(states) == 0 {
		return 0, nil
	}
	in := `state IN (?` + strings.Repeat(`, ?`, len(states)-1) + `) AND updated_ns < ?`
	args := make([]any, 0, len(states)+1)
	for _, st := range states {
		args = append(args, st.String())
	}
	args = append(args, ns(before))
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.fail("prune", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `DELETE FROM history WHERE message_id IN (SELECT id FROM messages WHERE `+in+`)`, args...); err != nil {
		return 0, s.fail("prune", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE `+in, args...)
	if err != nil {
		return 0, s.fail("prune", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, s.fail("prune", err)
	}
	return int(n), s.fail("prune", tx.Commit())
}

// Move implements ports.Outbox.
func (s *Store) Move(ctx context.Context, id int64, from []domain.OutboxState, c ports.OutboxChange) (ports.OutboxMessage, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return ports.OutboxMessage{}, s.fail("change a message", err)
	}
	defer func() { _ = tx.Rollback() }()
	m, err := scanMessage(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM messages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("message %d: %w", id, ports.ErrNoMessage)
	}
	if err != nil {
		return m, s.fail("change a message", err)
	}
	ok := false
	for _, st := range from {
		ok = ok || st == m.State
	}
	if !ok {
		return m, fmt.Errorf("message %d is %s: %w", id, m.State, ports.ErrWrongState)
	}
	m.State, m.Reason, m.Updated = c.State, c.Reason, fromNS(ns(c.At))
	if c.State == domain.OutboxStored {
		m.NextAt = fromNS(ns(c.NextAt))
	}
	if !c.Expires.IsZero() {
		m.Expires = fromNS(ns(c.Expires))
	}
	if c.Attempt {
		m.Attempts++
		m.AttemptAt = m.Updated
	}
	if c.Tried {
		m.Tries++
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	if c.ClearReceipt {
		m.Outcome, m.Transport, m.MsgID = "", "", ""
	}
	if c.Retries > m.Retries {
		m.Retries = c.Retries
	}
	set(&m.SessionID, c.SessionID)
	set(&m.Transcript, c.Transcript)
	set(&m.Outcome, c.Outcome)
	set(&m.Transport, c.Transport)
	set(&m.MsgID, c.MsgID)
	set(&m.Rule, c.Rule)
	set(&m.ApprovedBy, c.ApprovedBy)
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET state = ?, reason = ?, next_ns = ?, updated_ns = ?, attempts = ?, tries = ?,
		session_id = ?, transcript = ?, attempt_ns = ?, outcome = ?, transport = ?, msg_id = ?, expires_ns = ?, rule = ?, approved_by = ?, retries = ?
		WHERE id = ?`,
		m.State.String(), m.Reason, ns(m.NextAt), ns(m.Updated), m.Attempts, m.Tries, m.SessionID, m.Transcript, ns(m.AttemptAt),
		m.Outcome, m.Transport, m.MsgID, ns(m.Expires), m.Rule, m.ApprovedBy, m.Retries, id); err != nil {
		return m, s.fail("change a message", err)
	}
	if err := addHistory(ctx, tx, id, c); err != nil {
		return m, s.fail("change a message", err)
	}
	if err := tx.Commit(); err != nil {
		return m, s.fail("change a message", err)
	}
	return m, nil
}

// addHistory adds change c of message id to its history: folded into the
// message's last line when that has c's state and reason (its count
// grows, its last time is c's), a new line otherwise.
func addHistory(ctx context.Context, tx *sql.Tx, id int64, c ports.OutboxChange) error {
	var last int64
	var state, reason string
	err := tx.QueryRowContext(ctx, `SELECT id, state, reason FROM history WHERE message_id = ? ORDER BY id DESC LIMIT 1`, id).Scan(&last, &state, &reason)
	switch {
	case err == nil && state == c.State.String() && reason == c.Reason:
		_, err = tx.ExecContext(ctx, `UPDATE history SET count = count + 1, last_ns = ? WHERE id = ?`, ns(c.At), last)
		return err
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO history (message_id, at_ns, last_ns, state, reason) VALUES (?, ?, ?, ?, ?)`,
		id, ns(c.At), ns(c.At), c.State.String(), c.Reason)
	return err
}

// Mark implements ports.Outbox.
func (s *Store) Mark(ctx context.Context, name string) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, `SELECT seq FROM marks WHERE name = ?`, name).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, s.fail("read a mark", err)
}

// SetMark implements ports.Outbox.
func (s *Store) SetMark(ctx context.Context, name string, seq int64) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO marks (name, seq) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET seq = excluded.seq`, name, seq)
	return s.fail("keep a mark", err)
}
