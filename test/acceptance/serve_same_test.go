//go:build unix

package acceptance

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fuzzCorpus is every value of the Go fuzz corpora under the module's
// testdata/fuzz folders (string(...) and []byte(...) lines).
func fuzzCorpus(t *testing.T) []string {
	var out []string
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(filepath.ToSlash(path), "/testdata/fuzz/") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			for _, p := range []string{"string(", "[]byte("} {
				if lit, ok := strings.CutPrefix(line, p); ok {
					if v, err := strconv.Unquote(strings.TrimSuffix(lit, ")")); err == nil {
						out = append(out, v)
					}
				}
			}
		}
		return sc.Err()
	})
	require.NoError(t, err)
	require.NotEmpty(t, out, "no fuzz corpus found")
	return out
}

// courierSocket is the courier's own socket in a message's wrapping: each
// courier has its own.
var courierSocket = regexp.MustCompile(`from="uds:[^"]*"`)

// contents are the texts of the frames a session received (each frame's
// message content, with the courier's wrapping, its socket left out).
func contents(t *testing.T, frames [][]byte) []string {
	out := []string{}
	for _, f := range frames {
		var doc struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		}
		require.NoError(t, json.Unmarshal(f, &doc), "%q", f)
		out = append(out, courierSocket.ReplaceAllString(doc.Message.Content, `from="uds:courier"`))
	}
	return out
}

// answer is what a send answered, as the differential test compares it:
// its exit code and refusal word, and its receipt's words.
type answer struct {
	Code                                               int
	OK                                                 bool
	Outcome, Transport, Harness, SessionID, Name, Word string
}

func answerOf(t *testing.T, r result) answer {
	var doc struct {
		OK        bool   `json:"ok"`
		Outcome   string `json:"outcome"`
		Transport string `json:"transport"`
		Harness   string `json:"harness"`
		SessionID string `json:"sessionId"`
		Name      string `json:"name"`
		Refusal   *struct {
			Reason   string `json:"reason"`
			ExitCode int    `json:"exitCode"`
		} `json:"refusal"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &doc), "stdout: %q stderr: %s", r.Stdout, r.Stderr)
	a := answer{Code: r.Code, OK: doc.OK, Outcome: doc.Outcome, Transport: doc.Transport, Harness: doc.Harness, SessionID: doc.SessionID, Name: doc.Name}
	if doc.Refusal != nil {
		a.Word = doc.Refusal.Reason
		assert.Equal(t, r.Code, doc.Refusal.ExitCode)
	}
	return a
}

// For any input, a send through the service answers as the same send with
// PEERCTL_SERVE=off: the same receipt words, refusal word and exit code,
// and the same bytes reach the session; a durable one refuses a text the
// same way. Over hostile texts and addresses (not UTF-8, NUL, 64 KiB + 1,
// empty, control characters) and the fuzz corpora. Before, the service's
// JSON socket turned bytes that are not UTF-8 into U+FFFD: a text the
// command line refuses was delivered, altered.
func TestServeAnswersAsASendWithoutIt(t *testing.T) {
	w := newServeWorld(t)
	w.startServe(t)
	off := append(w.env(t), "PEERCTL_SERVE=off")
	run := func(env []string, stdin []byte, args ...string) result {
		return catRun(t, w.sessions, runOpts{Env: env, Stdin: stdin}, append([]string{"--config-dir", w.config, "send", "--json", "--confirm-timeout", "300ms"}, args...)...)
	}
	type input struct {
		desc, address, text string
		stdin               bool
	}
	const cap64k = 64 * 1024
	inputs := []input{
		{"plain", w.id, "the build is green", false},
		{"empty", w.id, "", false},
		{"blanks", w.id, " \t\n", false},
		{"empty on stdin", w.id, "", true},
		{"not UTF-8 as an argument", w.id, "caf\xe9", false},
		{"not UTF-8 on stdin", w.id, "\xff\xfe\xfd", true},
		{"NUL", w.id, "before\x00after", true},
		{"64 KiB + 1", w.id, strings.Repeat("a", cap64k+1), true},
		{"exactly 64 KiB", w.id, strings.Repeat("é", cap64k/2), true},
		{"control characters", w.id, "a\x1b[2J\r\x07\tb\n", true},
		{"a surrogate's bytes", w.id, "\xed\xa0\x80", false},
		{"an address not UTF-8", "\xff\xfeproj", "hello", false},
		{"an address with control characters", "ghost\x1b[31m\r", "hello", false},
	}
	for i, v := range fuzzCorpus(t) {
		inputs = append(inputs, input{"fuzz text " + strconv.Itoa(i), w.id, v, true}, input{"fuzz address " + strconv.Itoa(i), v, "hello", false})
	}
	for _, in := range inputs {
		args, stdin := []string{"--", in.address, in.text}, []byte(nil)
		if in.stdin {
			args, stdin = []string{"--", in.address, "-"}, []byte(in.text)
		}
		before := len(w.listener.Frames())
		cold := run(off, stdin, args...)
		coldFrames := w.listener.Frames()[before:]
		before = len(w.listener.Frames())
		warm := run(w.env(t), stdin, args...)
		warmFrames := w.listener.Frames()[before:]
		want := answerOf(t, cold)
		assert.Equal(t, want, answerOf(t, warm), "%s: through the service (stderr %s) and without (stderr %s)", in.desc, warm.Stderr, cold.Stderr)
		assert.Equal(t, contents(t, coldFrames), contents(t, warmFrames), "%s: the text that reached the session", in.desc)

		if in.address != w.id || want.Word == "" {
			// A durable send keeps a message whose target is not there, and
			// the warm courier would drop the same text again within 30 s
			// (Claude Code's rule): not the same answer, by design.
			continue
		}
		durable := run(w.env(t), stdin, append([]string{"--durable=1h"}, args...)...)
		assert.Equal(t, want, answerOf(t, durable), "%s: a durable send refuses as a plain one (stderr %s)", in.desc, durable.Stderr)
	}
	// Some of them were refused, some delivered: the comparison saw both.
	assert.NotEmpty(t, w.listener.Frames())
}

// Two keys that differ only in bytes that are not UTF-8 are two messages;
// the same key and text again is the first message (another text, a
// key_conflict). Before, both keys became one
// on the service's JSON socket and the second message was dropped (exit 0).
func TestServeKeysAreBytes(t *testing.T) {
	w := newServeWorld(t)
	ids := map[string]int64{}
	for _, key := range []string{"k\xff", "k\xfe", "k\ufffd"} {
		r := w.peerctl(t, nil, "send", "--json", "--durable=1h", "--key", key, "nobody", "for key "+strconv.Quote(key))
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		got := decodeReceipt(t, r)
		assert.False(t, got.Outbox.Duplicate, "key %q", key)
		ids[key] = got.Outbox.ID
	}
	assert.Len(t, w.outbox(t), 3, "three keys, three messages")
	r := w.peerctl(t, nil, "send", "--json", "--durable=1h", "--key", "k\xff", "nobody", "again")
	assert.Equal(t, 14, r.Code, "the same key with another text is key_conflict; stderr: %s", r.Stderr)
	r = w.peerctl(t, nil, "send", "--json", "--durable=1h", "--key", "k\xff", "nobody", "for key "+strconv.Quote("k\xff"))
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	again := decodeReceipt(t, r)
	assert.True(t, again.Outbox.Duplicate)
	assert.Equal(t, ids["k\xff"], again.Outbox.ID)
	assert.Equal(t, "for key "+strconv.Quote("k\xff"), w.show(t, again.Outbox.ID).Text)
	assert.Len(t, w.outbox(t), 3)
}
