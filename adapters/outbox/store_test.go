package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

func openTemp(t *testing.T) (*outbox.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", outbox.FileName)
	s, err := outbox.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)

func msg(key string) ports.OutboxMessage {
	return ports.OutboxMessage{Key: key, Address: "proj-89", Text: "rebase please", Request: []byte(`{"argv":["send"]}`),
		Created: t0, Expires: t0.Add(24 * time.Hour), NextAt: t0}
}

func TestOpenCreatesWALFileAndFolder(t *testing.T) {
	s, path := openTemp(t)
	fi, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	v, err := s.Version(context.Background())
	require.NoError(t, err)
	assert.Equal(t, outbox.SchemaVersion, v)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "wal", mode)
}

func TestMigrationsRunOnceAndKeepData(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	m, created, err := s.Put(ctx, msg("k1"))
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())
	s2, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	defer s2.Close()
	got, _, err := s2.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, "rebase please", got.Text)
}

// olderFile is a WAL-mode file as a peerctl of schema version n left it
// (this build's first n steps), open.
func olderFile(t *testing.T, n int) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "st", outbox.FileName)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	_, err = db.Exec(`PRAGMA journal_mode=WAL`)
	require.NoError(t, err)
	require.NoError(t, outbox.MigrateTo(context.Background(), db, n))
	return db, path
}

// A file of schema version 1 (before messages had a host) opens at the
// current version with its messages kept, each for this machine.
func TestVersionOneFileMigratesKeepingMessages(t *testing.T) {
	ctx := context.Background()
	s := migrated(t, 1, `INSERT INTO messages (address, text, request, state, created_ns, expires_ns, updated_ns) VALUES ('proj-89', 'kept', x'', 'stored', 1, 2, 1)`)
	got, err := s.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "kept", got[0].Text)
	assert.Equal(t, "", got[0].Host)
	m := msg("")
	m.Host = "far"
	put, _, err := s.Put(ctx, m)
	require.NoError(t, err)
	back, _, err := s.Get(ctx, put.ID)
	require.NoError(t, err)
	assert.Equal(t, "far", back.Host)
	ev, err := s.Events(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, ev, 1, "the old row was written with no history")
	assert.Equal(t, "far", ev[0].Host)
}

func TestNewerSchemaRefusedFileKept(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA user_version = 99`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = outbox.Open(ctx, path)
	var oe *outbox.Error
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, err.Error(), "schema version 99 is newer")
	_, err = outbox.OpenReadOnly(ctx, path)
	require.ErrorAs(t, err, &oe)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

func TestIdempotencyKeyReturnsFirst(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	first, created, err := s.Put(ctx, msg("build-42"))
	require.NoError(t, err)
	require.True(t, created)
	again := msg("build-42")
	again.Text = "a different text"
	second, created, err := s.Put(ctx, again)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, first.ID, second.ID)
	assert.Equal(t, "rebase please", second.Text)
	// No key: every Put is a new message.
	a, _, err := s.Put(ctx, msg(""))
	require.NoError(t, err)
	b, _, err := s.Put(ctx, msg(""))
	require.NoError(t, err)
	assert.NotEqual(t, a.ID, b.ID)
}

func TestConcurrentPutsOneKeyOneMessage(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	var wg sync.WaitGroup
	ids := make(chan int64, 16)
	for range 16 {
		wg.Go(func() {
			m, _, err := s.Put(ctx, msg("same"))
			assert.NoError(t, err)
			ids <- m.ID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		seen[id] = true
	}
	assert.Len(t, seen, 1)
	all, err := s.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

func TestMoveKeepsHistoryAndChecksFromState(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	m, _, err := s.Put(ctx, msg(""))
	require.NoError(t, err)
	at := t0.Add(time.Second)
	_, err = s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering, At: at,
		Attempt: true, SessionID: "26df9a5b-0000", Transcript: "/t/x.jsonl"})
	require.NoError(t, err)
	_, err = s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled, At: at})
	require.ErrorIs(t, err, ports.ErrWrongState)
	got, err := s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxDelivering}, ports.OutboxChange{State: domain.OutboxDelivered,
		At: at.Add(time.Second), Outcome: "queued", Transport: "courier", MsgID: "msg-1"})
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, got.State)
	assert.Equal(t, 1, got.Attempts)
	assert.Equal(t, at, got.AttemptAt)
	assert.Equal(t, "26df9a5b-0000", got.SessionID)
	assert.Equal(t, "msg-1", got.MsgID)
	_, hist, err := s.Get(ctx, m.ID)
	require.NoError(t, err)
	require.Len(t, hist, 3)
	assert.Equal(t, []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering, domain.OutboxDelivered},
		[]domain.OutboxState{hist[0].State, hist[1].State, hist[2].State})
	assert.Equal(t, t0, hist[0].At)
	_, err = s.Move(ctx, 999, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled})
	require.ErrorIs(t, err, ports.ErrNoMessage)
	_, _, err = s.Get(ctx, 999)
	require.ErrorIs(t, err, ports.ErrNoMessage)
}

var pendingOnly = ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}}

func TestListFilters(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	a, _, _ := s.Put(ctx, msg(""))
	later := msg("")
	later.NextAt = t0.Add(time.Hour)
	later.Address = "other"
	b, _, _ := s.Put(ctx, later)
	_, err := s.Move(ctx, b.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering, At: t0, Attempt: true})
	require.NoError(t, err)
	pending, err := s.List(ctx, pendingOnly)
	require.NoError(t, err)
	assert.Len(t, pending, 2, "a message left delivering is still pending (for its check)")
	l, err := s.List(ctx, ports.OutboxFilter{Target: "other"})
	require.NoError(t, err)
	require.Len(t, l, 1)
	assert.Equal(t, b.ID, l[0].ID)
	l, err = s.List(ctx, ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored}})
	require.NoError(t, err)
	require.Len(t, l, 1)
	assert.Equal(t, a.ID, l[0].ID)
	l, err = s.List(ctx, ports.OutboxFilter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, l, 1)
	assert.Equal(t, b.ID, l[0].ID, "newest first")
}

// TestListPages: Before pages through the outbox, newest first, with the
// other filters (the dashboard's "older").
func TestListPages(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	var ids []int64
	for range 5 {
		m, _, err := s.Put(ctx, msg(""))
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	_, err := s.Move(ctx, ids[1], []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled, At: t0})
	require.NoError(t, err)
	idsOf := func(l []ports.OutboxMessage) []int64 {
		var out []int64
		for _, m := range l {
			out = append(out, m.ID)
		}
		return out
	}
	l, err := s.List(ctx, ports.OutboxFilter{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[4], ids[3]}, idsOf(l))
	l, err = s.List(ctx, ports.OutboxFilter{Limit: 2, Before: ids[3]})
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[2], ids[1]}, idsOf(l), "the next page: older than the last one shown")
	l, err = s.List(ctx, ports.OutboxFilter{Limit: 2, Before: ids[1]})
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[0]}, idsOf(l))
	l, err = s.List(ctx, ports.OutboxFilter{Before: ids[4], States: []domain.OutboxState{domain.OutboxStored}})
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[3], ids[2], ids[0]}, idsOf(l), "with a state")
	for _, tc := range []struct {
		f    ports.OutboxFilter
		want int
	}{
		{ports.OutboxFilter{Limit: 2}, 5}, {ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored}}, 4},
		{ports.OutboxFilter{Before: ids[3], Limit: 1}, 3}, {ports.OutboxFilter{Target: "nobody"}, 0},
	} {
		n, err := s.Count(ctx, tc.f)
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "count %+v: as List, its Limit aside", tc.f)
	}
}

// A writer that died without closing (kill -9) leaves its WAL: the next
// open finds every committed message, the one mid-attempt in delivering.
func TestCrashLeavesCommittedStateInWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, outbox.FileName)
	s, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	m, _, err := s.Put(ctx, msg("k"))
	require.NoError(t, err)
	_, err = s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering, At: t0, Attempt: true})
	require.NoError(t, err)
	// Copy the files as a crash would leave them, before any close.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suffix)
		if err == nil {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "copy.db"+suffix), b, 0o600))
		}
	}
	require.NoError(t, s.Close())
	s2, err := outbox.Open(ctx, filepath.Join(dir, "copy.db"))
	require.NoError(t, err)
	defer s2.Close()
	due, err := s2.List(ctx, pendingOnly)
	require.NoError(t, err)
	require.Len(t, due, 1)
	assert.Equal(t, domain.OutboxDelivering, due[0].State)
}

func TestNotADatabaseKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), outbox.FileName)
	junk := bytes.Repeat([]byte("not sqlite at all\n"), 400)
	require.NoError(t, os.WriteFile(path, junk, 0o600))
	_, err := outbox.Open(context.Background(), path)
	var oe *outbox.Error
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, err.Error(), "kept")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, junk, after)
	_, err = os.Stat(path + "-wal")
	assert.True(t, os.IsNotExist(err), "no WAL is made beside a file that is not a database")
}

func TestCorruptPagesFailIntegrityCheckKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), outbox.FileName)
	s, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	for i := range 200 {
		m := msg("")
		m.Text = string(bytes.Repeat([]byte{byte('a' + i%26)}, 500))
		_, _, err := s.Put(ctx, m)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 5*4096)
	// Damage pages 3 and 4 (the table's b-tree), not the header.
	for i := 2 * 4096; i < 4*4096; i++ {
		b[i] = 0xA5
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
	_, err = outbox.Open(ctx, path)
	var oe *outbox.Error
	require.ErrorAs(t, err, &oe)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, b, after, "the damaged file is left as it was")
}

func TestReadOnlyReaderSeesWriter(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	m, _, err := s.Put(ctx, msg("k"))
	require.NoError(t, err)
	r, err := outbox.OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer r.Close()
	got, hist, err := r.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, "k", got.Key)
	assert.Len(t, hist, 1)
	_, err = outbox.OpenReadOnly(ctx, filepath.Join(t.TempDir(), "absent.db"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestEventsFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	evs, err := s.Events(ctx, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, evs)
	a, _, _ := s.Put(ctx, msg(""))
	_, err = s.Move(ctx, a.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled, At: t0, Reason: "by test"})
	require.NoError(t, err)
	evs, err = s.Events(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, domain.OutboxCancelled, evs[1].State)
	assert.Equal(t, "proj-89", evs[1].Address)
	assert.Equal(t, a.ID, evs[1].MessageID)
	evs, err = s.Events(ctx, evs[0].Seq, 10)
	require.NoError(t, err)
	assert.Len(t, evs, 1)
}
func TestReadOnlyAfterTheWriterClosed(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	m, _, err := s.Put(ctx, msg("k"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(path + "-wal")
	require.True(t, os.IsNotExist(err), "a clean close folds the WAL back")
	r, err := outbox.OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer r.Close()
	_, _, err = r.Get(ctx, m.ID)
	require.NoError(t, err)
}

// A full disk: storing fails with an *Error that says so, what was stored
// before is still there and readable, and the file is neither truncated
// nor replaced (it opens and passes its check afterwards).
func TestFullDiskRefusesAndKeepsTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), outbox.FileName)
	s, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	kept, _, err := s.Put(ctx, msg("before"))
	require.NoError(t, err)
	require.NoError(t, s.FillDisk(ctx))
	big := msg("")
	big.Text = string(bytes.Repeat([]byte("x"), 64<<10))
	_, _, err = s.Put(ctx, big)
	var oe *outbox.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, path, oe.Path)
	assert.Contains(t, err.Error(), "full")
	assert.Contains(t, err.Error(), "kept")
	got, hist, err := s.Get(ctx, kept.ID)
	require.NoError(t, err, "what was stored is still read")
	assert.Equal(t, "before", got.Key)
	assert.Len(t, hist, 1)
	l, err := s.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Len(t, l, 1, "nothing half-stored")
	require.NoError(t, s.Close())
	s, err = outbox.Open(ctx, path)
	require.NoError(t, err, "the file is whole: it opens and passes its check")
	defer s.Close()
	got, _, err = s.Get(ctx, kept.ID)
	require.NoError(t, err)
	assert.Equal(t, "before", got.Key)
}

// A file of schema version 2 has each request rewritten by the caller's
// upgrade (one it cannot read is stored empty, its message kept), and the
// old requests' bytes are in neither the file nor its WAL afterwards.
func TestVersionTwoRequestsUpgradedAndScrubbed(t *testing.T) {
	ctx := context.Background()
	db, path := olderFile(t, 2)
	secret := "SECRET-bytes-of-the-environment"
	_, err := db.Exec(`INSERT INTO messages (address, text, request, state, created_ns, expires_ns, updated_ns) VALUES
		('a', 'one', ?, 'stored', 1, 2, 1), ('b', 'two', 'not json at all `+secret+`', 'stored', 1, 2, 1); PRAGMA user_version = 2`,
		`{"argv":["send","a","one"],"env":["TOKEN=`+secret+`"]}`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	upgrade := func(req []byte) ([]byte, error) {
		if !bytes.HasPrefix(req, []byte("{")) {
			return nil, assert.AnError
		}
		return []byte(`{"v":3}`), nil
	}
	s, err := outbox.Open(ctx, path, outbox.WithRequestUpgrade(upgrade))
	require.NoError(t, err)
	defer s.Close()
	msgs, err := s.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	require.Len(t, msgs, 2, "every message kept")
	assert.Equal(t, "", string(msgs[0].Request), "one the upgrade cannot read is stored empty")
	assert.Equal(t, `{"v":3}`, string(msgs[1].Request))
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, _ := os.ReadFile(path + suffix)
		assert.False(t, bytes.Contains(b, []byte(secret)), "the old request is still in outbox.db%s", suffix)
	}
}

// A change with the state and reason of the last history line is folded
// into it (its count and last time); any other change adds a line.
func TestHistoryFoldsRepeats(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	m, _, err := s.Put(ctx, msg(""))
	require.NoError(t, err)
	away := ports.OutboxChange{State: domain.OutboxStored, Reason: "not_live: away", Tried: true}
	for i := 1; i <= 3; i++ {
		away.At = t0.Add(time.Duration(i) * time.Second)
		m, err = s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, away)
		require.NoError(t, err)
	}
	assert.Equal(t, 3, m.Tries)
	_, err = s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, Reason: "not_live: gone", At: t0.Add(4 * time.Second)})
	require.NoError(t, err)
	_, hist, err := s.Get(ctx, m.ID)
	require.NoError(t, err)
	require.Len(t, hist, 3)
	assert.Equal(t, 1, hist[0].Count)
	assert.Equal(t, hist[0].At, hist[0].Last)
	assert.Equal(t, 3, hist[1].Count)
	assert.Equal(t, t0.Add(time.Second), hist[1].At, "the first time")
	assert.Equal(t, t0.Add(3*time.Second), hist[1].Last, "the last time")
	assert.Equal(t, "not_live: gone", hist[2].Reason)
	ev, err := s.Events(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, ev, 3, "a folded change is no new event")
	assert.Equal(t, 3, ev[1].Count)
}

// A file of schema version 2 opens at the current version, through the
// typed requests (3) and the folded history (4): its messages and history
// kept, each history line a run of one, tries counted from the attempts it
// had.
func TestVersionTwoFileMigrates(t *testing.T) {
	ctx := context.Background()
	s := migrated(t, 2, `INSERT INTO messages (address, host, text, request, state, created_ns, expires_ns, updated_ns, attempts)
		VALUES ('proj-89', 'far', 'kept', x'', 'stored', 1, 2, 1, 2);
		INSERT INTO history (message_id, at_ns, state, reason) VALUES (1, 1, 'stored', '')`)
	m, hist, err := s.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, "kept", m.Text)
	assert.Equal(t, "far", m.Host)
	assert.Equal(t, 2, m.Tries)
	require.Len(t, hist, 1)
	assert.Equal(t, 1, hist[0].Count)
	assert.Equal(t, hist[0].At, hist[0].Last)
}

// migrated makes a file as a peerctl of schema version v left it, with
// rows (SQL), and returns it opened by this build, at SchemaVersion.
func migrated(t *testing.T, v int, rows string) *outbox.Store {
	t.Helper()
	ctx := context.Background()
	db, path := olderFile(t, v)
	_, err := db.Exec(rows)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	s, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.SchemaVersion, got)
	return s
}

// A file of schema version 2 read before the service migrates it (outbox
// show right after an upgrade) lists its messages and history: the
// hand-overs stand for the tries, each history line for one change.
func TestVersionTwoFileReadsBeforeItMigrates(t *testing.T) {
	ctx := context.Background()
	db, path := olderFile(t, 2)
	_, err := db.Exec(`INSERT INTO messages (address, text, request, state, created_ns, expires_ns, updated_ns, attempts) VALUES ('proj-89', 'kept', x'', 'stored', 1, 2, 1, 2);
		INSERT INTO history (message_id, at_ns, state, reason) VALUES (1, 1, 'stored', '')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	s, err := outbox.OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	m, hist, err := s.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, 2, m.Tries)
	require.Len(t, hist, 1)
	assert.Equal(t, 1, hist[0].Count)
	assert.Equal(t, hist[0].At, hist[0].Last)
	got, err := s.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Len(t, got, 1)
	ev, err := s.Events(ctx, 0, 10)
	require.NoError(t, err)
	assert.Len(t, ev, 1)
}

// TestReadOnlyBeforeTheSchemaExists: a reader that opens the file after
// the service made it and before its first migration committed (user
// version 0, no tables) finds an empty outbox, not "no such table"
// (outbox list racing a service started on demand).
func TestReadOnlyBeforeTheSchemaExists(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600)) // an empty file is a database with no schema
	s, err := outbox.OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	list, err := s.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Empty(t, list)
	_, _, err = s.Get(ctx, 1)
	assert.ErrorIs(t, err, ports.ErrNoMessage)
	events, err := s.Events(ctx, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, events)
	counts, err := s.Counts(ctx)
	require.NoError(t, err)
	assert.Empty(t, counts)
}

// A message held by the trust policy is stored awaiting approval, with its
// sender and rule; its approver is kept by Move. A file of schema 4 read
// before the service migrates it has no sender (entrance unknown).
func TestHeldMessageKeepsSenderRuleAndApprover(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	m := msg("")
	m.State, m.Reason, m.Rule = domain.OutboxAwaitingApproval, "held", "rule 1: hold from=mcp to=*"
	m.Sender = domain.NewSender(domain.EntranceMCP, "").WithSession("writer-1", "id-1")
	got, _, err := s.Put(ctx, m)
	require.NoError(t, err)
	got, hist, err := s.Get(ctx, got.ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxAwaitingApproval, got.State)
	assert.Equal(t, "mcp:writer-1", got.Sender.String())
	assert.Equal(t, "id-1", got.Sender.SessionID())
	assert.Equal(t, "rule 1: hold from=mcp to=*", got.Rule)
	require.Len(t, hist, 1)
	assert.Equal(t, domain.OutboxAwaitingApproval, hist[0].State)
	got, err = s.Move(ctx, got.ID, []domain.OutboxState{domain.OutboxAwaitingApproval}, ports.OutboxChange{State: domain.OutboxStored, At: time.Now(), ApprovedBy: "cli"})
	require.NoError(t, err)
	assert.Equal(t, "cli", got.ApprovedBy)
	assert.Equal(t, "rule 1: hold from=mcp to=*", got.Rule, "kept")

	db, path := olderFile(t, 4)
	_, err = db.Exec(`INSERT INTO messages (address, text, request, state, created_ns, expires_ns, updated_ns) VALUES ('proj-89', 'kept', x'', 'stored', 1, 2, 1);
		INSERT INTO history (message_id, at_ns, last_ns, state, reason) VALUES (1, 1, 1, 'stored', '')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	ro, err := outbox.OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer ro.Close()
	old, _, err := ro.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, domain.EntranceUnknown, old.Sender.Entrance())
}

func TestMarksAndRetriesAreKept(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	n, err := s.Mark(ctx, "receipts-published")
	require.NoError(t, err)
	assert.Zero(t, n, "none yet")
	require.NoError(t, s.SetMark(ctx, "receipts-published", 7))
	require.NoError(t, s.SetMark(ctx, "receipts-published", 9))
	put := msg("k")
	put.Retries = 1
	got, _, err := s.Put(ctx, put)
	require.NoError(t, err)
	got, _, err = s.Get(ctx, got.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Retries, "stored with it")
	_, err = s.Move(ctx, got.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxRefused, At: t0,
		Outcome: "queued", Transport: "bus", Reason: "no"})
	require.NoError(t, err)
	got, err = s.Move(ctx, got.ID, []domain.OutboxState{domain.OutboxRefused}, ports.OutboxChange{State: domain.OutboxStored, At: t0,
		Retries: 2, ClearReceipt: true, Reason: "retried"})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Retries)
	assert.Empty(t, got.Transport+got.Outcome, "the receipt cleared")
	got, err = s.Move(ctx, got.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, At: t0, Retries: 1, Reason: "again"})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Retries, "never lowered")
	require.NoError(t, s.Close())

	s, err = outbox.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	n, err = s.Mark(ctx, "receipts-published")
	require.NoError(t, err)
	assert.Equal(t, int64(9), n, "kept across a restart")
	got, _, err = s.Get(ctx, got.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, got.Retries)

	m, _ := readOlder(t, 5, 2)
	assert.Zero(t, m.Retries, "a file before schema 6 read as it is")
}

// A message keeps the time to live it was stored with, whatever Move does
// to its expiry; a file of schema 6 takes it as creation to expiry, read
// before it migrates and after.
func TestTheTTLAMessageWasStoredWith(t *testing.T) {
	ctx := context.Background()
	s, err := outbox.Open(ctx, filepath.Join(t.TempDir(), outbox.FileName))
	require.NoError(t, err)
	defer s.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m, _, err := s.Put(ctx, ports.OutboxMessage{Address: "proj-89", Text: "x", Created: t0, Expires: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, time.Hour, m.TTL)
	m, err = s.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, At: t0, Expires: t0.Add(9 * time.Hour), Reason: "retried"})
	require.NoError(t, err)
	assert.Equal(t, time.Hour, m.TTL, "a new expiry is no new TTL")

	m, old := readOlder(t, 6, 61)
	assert.Equal(t, 60*time.Nanosecond, m.TTL, "a file before schema 7 read as it is")
	s7, err := outbox.Open(ctx, old)
	require.NoError(t, err)
	defer s7.Close()
	m, _, err = s7.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, 60*time.Nanosecond, m.TTL, "migrated")
}

// readOlder makes a file of schema version v with one message, created at
// 1 ns and expiring at expires ns, and returns it as OpenReadOnly reads it
// before the service migrates the file, and the file's path.
func readOlder(t *testing.T, v int, expires int64) (ports.OutboxMessage, string) {
	t.Helper()
	db, path := olderFile(t, v)
	_, err := db.Exec(`INSERT INTO messages (address, text, request, state, created_ns, expires_ns, updated_ns) VALUES ('proj-89', 'kept', x'', 'stored', 1, ?, 1)`, expires)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	ro, err := outbox.OpenReadOnly(context.Background(), path)
	require.NoError(t, err)
	defer ro.Close()
	m, _, err := ro.Get(context.Background(), 1)
	require.NoError(t, err)
	return m, path
}
