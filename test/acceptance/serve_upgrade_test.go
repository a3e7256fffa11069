//go:build unix

package acceptance

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// schemaV2 is the outbox's schema as the release before typed requests
// wrote it (user_version 2): each message's request held the sender's
// command line and whole environment.
const schemaV2 = `CREATE TABLE messages (
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
	CREATE INDEX history_message ON history(message_id, id);
	ALTER TABLE messages ADD COLUMN host TEXT NOT NULL DEFAULT '';
	PRAGMA user_version = 2;`

// A schema-2 outbox, as the release before typed requests left it (stored
// messages whose requests hold the sender's command line and environment,
// a secret among it, in the file and in its WAL), is migrated when the
// service starts: every message is kept and delivered with the flags and
// settings its command line gave, and the environment is gone from the
// database, its WAL and its shared memory, the secret's bytes with it.
func TestServeUpgradesAVersionTwoOutboxAndForgetsTheEnvironment(t *testing.T) {
	w := newServeWorld(t)
	secret := "sk-ant-FAKE-secret-7f3a9c1e"
	password := "opencode-FAKE-password-42"
	env := append(w.env(t), "ANTHROPIC_API_KEY="+secret, "OPENCODE_SERVER_PASSWORD="+password)
	request := func(args ...string) []byte {
		argv := append([]string{"--config-dir", w.config, "send", "--json"}, args...)
		b, err := json.Marshal(map[string]any{"argv": argv, "env": env})
		require.NoError(t, err)
		return b
	}
	now := time.Now()
	messages := []struct {
		key, address, text string
		request            []byte
	}{
		{"", w.id, "kept across the upgrade", request("--durable=1h", "--confirm-timeout", "300ms", w.id, "kept across the upgrade")},
		{"k-2", "later", "for a session that comes later", request("--durable=1h", "--key", "k-2", "--no-confirm", "later", "-")},
	}

	// The release wrote it in WAL mode: the rows are in the WAL until a
	// checkpoint, so copy the file and its WAL while they are there.
	tmp := filepath.Join(t.TempDir(), "outbox.db")
	db, err := sql.Open("sqlite", tmp)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`, schemaV2} {
		_, err = db.Exec(q)
		require.NoError(t, err, q)
	}
	for _, m := range messages {
		var key any
		if m.key != "" {
			key = m.key
		}
		res, err := db.Exec(`INSERT INTO messages (key, address, text, request, state, created_ns, expires_ns, next_ns, updated_ns)
			VALUES (?, ?, ?, ?, 'stored', ?, ?, ?, ?)`, key, m.address, m.text, m.request, now.UnixNano(), now.Add(time.Hour).UnixNano(), now.UnixNano(), now.UnixNano())
		require.NoError(t, err)
		id, err := res.LastInsertId()
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO history (message_id, at_ns, state) VALUES (?, ?, 'stored')`, id, now.UnixNano())
		require.NoError(t, err)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(w.db()), 0o700))
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(tmp + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(w.db()+suffix, b, 0o600))
	}
	require.NoError(t, db.Close())
	files := func() (all []byte) {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			b, _ := os.ReadFile(w.db() + suffix)
			all = append(all, b...)
		}
		return all
	}
	require.True(t, bytes.Contains(files(), []byte(secret)), "the secret is in the schema-2 files to begin with")

	w.startServe(t)
	eventually(t, 60*time.Second, "the message to the live session to be delivered", func() bool { return w.show(t, 1).State == "delivered" })
	l := w.addSession(t, "later")
	eventually(t, 60*time.Second, "the message to the later session to be delivered", func() bool { return w.show(t, 2).State == "delivered" })
	require.Len(t, w.listener.Wait(1), 1)
	assert.Contains(t, string(w.listener.Frames()[0]), "kept across the upgrade")
	require.Len(t, l.Wait(1), 1)
	assert.Contains(t, string(l.Frames()[0]), "for a session that comes later")
	assert.Len(t, w.outbox(t), 2, "every message kept")
	assert.Equal(t, "k-2", w.show(t, 2).Key)

	for _, gone := range []string{secret, password, "ANTHROPIC_API_KEY", "OPENCODE_SERVER_PASSWORD", "FAKECLAUDE_SCENARIO"} {
		assert.False(t, bytes.Contains(files(), []byte(gone)), "%s is still in the outbox's files", gone)
	}
}

// A service killed (kill -9) after it read a durable send and before it
// answered leaves its client saying outcome_unknown (exit 12) with the
// message's id and the command to look, never "nothing was stored"; the
// next service checks the interrupted hand-over (outcome_unknown: nothing
// to read), and a retry delivers it once.
func TestServeKilledBeforeItAnswersIsOutcomeUnknown(t *testing.T) {
	w := newServeWorld(t)
	// The service's couriers hang: its attempt never answers.
	srv := exec.Command(peerctlBin(t), "serve")
	srv.Env = append(w.env(t), "FAKECLAUDE_SCENARIO=hang")
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL); _ = srv.Wait() })
	eventually(t, 30*time.Second, "the service's socket to take a connection", func() bool {
		conn, err := dialSocket(w.socket())
		if err == nil {
			_ = conn.Close()
		}
		return err == nil
	})

	var stdout, stderr bytes.Buffer
	client := exec.Command(peerctlBin(t), "--config-dir", w.config, "send", "--json", "--durable=1h", "--key", "k-9", "--confirm-timeout", "300ms", w.id, "are you there?")
	client.Env, client.Stdout, client.Stderr = w.env(t), &stdout, &stderr
	require.NoError(t, client.Start())
	eventually(t, 60*time.Second, "the service's attempt to begin", func() bool {
		m := w.outbox(t)
		return len(m) == 1 && m[0].State == "delivering"
	})
	require.NoError(t, syscall.Kill(-srv.Process.Pid, syscall.SIGKILL))
	err := client.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout: %s stderr: %s", stdout.String(), stderr.String())
	assert.Equal(t, 12, ee.ExitCode(), "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "outcome_unknown")
	assert.Contains(t, stderr.String(), "peerctl outbox show 1")
	assert.NotContains(t, stderr.String(), "nothing was stored")

	// The next service checks it: there is no transcript to read, so it is
	// outcome_unknown and waits, not sent again on a guess; outbox retry
	// looks again, finds nothing to read, and it is delivered, once.
	w.startServe(t)
	eventually(t, 60*time.Second, "the message to be outcome_unknown", func() bool { return w.show(t, 1).State == "outcome_unknown" })
	assert.Empty(t, w.listener.Frames(), "sent again without a look")
	r := w.peerctl(t, nil, "outbox", "retry", "1")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	eventually(t, 60*time.Second, "the message to be delivered", func() bool { return w.show(t, 1).State == "delivered" })
	assert.Len(t, w.listener.Wait(1), 1)
	assert.Len(t, w.outbox(t), 1)
}

// A durable send stores its request, not its sender's environment: a
// secret in it (an API key, a server password) is in none of the outbox's
// files. Before, each message kept the whole environment.
func TestServeStoresNoEnvironment(t *testing.T) {
	w := newServeWorld(t)
	secret, password := "sk-ant-FAKE-never-stored-51", "opencode-FAKE-never-stored-77"
	env := append(w.env(t), "ANTHROPIC_API_KEY="+secret, "OPENCODE_SERVER_PASSWORD="+password)
	r := catRun(t, w.sessions, runOpts{Env: env}, "--config-dir", w.config, "send", "--json", "--durable=1h", "--key", "k-1", "nobody", "kept without secrets")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	w.stopServe(t)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, _ := os.ReadFile(w.db() + suffix)
		for _, gone := range []string{secret, password, "ANTHROPIC_API_KEY"} {
			assert.False(t, bytes.Contains(b, []byte(gone)), "%s is in outbox.db%s", gone, suffix)
		}
	}
	assert.Len(t, w.outbox(t), 1)
}
