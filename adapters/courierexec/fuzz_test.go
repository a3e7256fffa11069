package courierexec_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/domain"
)

const (
	seedName = "proj-89"
	seedText = "the API changed, rebase"
)

// seedOutputs returns the real courier output (not logged in, Claude Code
// 2.1.328) and a verbose transcript constructed in the documented shape.
func seedOutputs(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, name := range []string{"not-logged-in.stdout.json", "constructed-verbose-sent.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		out = append(out, b, append([]byte("nvm: using node 22\n"), b...))
	}
	return out
}

// FuzzParseOutput: ParseOutput never panics, and what it accepts has a
// result message.
func FuzzParseOutput(f *testing.F) {
	for _, b := range seedOutputs(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"type":"result"`))
	f.Add([]byte("[\n{\"type\":\"result\",\"result\":null}]"))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		out, err := courierexec.ParseOutput(stdout)
		if err != nil {
			return
		}
		require.NotNil(t, out.Result)
		assert.Equal(t, "result", out.Result.Type)
		assert.Equal(t, out.Array, len(out.Messages) > 0)
	})
}

// FuzzJudge: Judge never panics, and never accepts output unless it holds a
// SendMessage tool_use whose "to" is the name and whose "message" is the
// wanted text byte for byte — read back here with exact (case-sensitive)
// keys, the way Claude Code's JavaScript reads its own tool input.
func FuzzJudge(f *testing.F) {
	for _, b := range seedOutputs(f) {
		f.Add(b, seedName, seedText, 0)
		f.Add(b, seedName, seedText+" ", 0)
		f.Add(b, seedName, seedText, 1)
	}
	// Claude Code's JavaScript reads "message"; a key that differs only in
	// case must not stand in for it.
	f.Add([]byte(`[{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"SendMessage","input":{"to":"a","message":"evil","Message":"good"}}]}},`+
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}},{"type":"result","result":"SENT"}]`), "a", "good", 0)
	f.Fuzz(func(t *testing.T, stdout []byte, name, text string, exit int) {
		if _, err := domain.NewMessage(text); err != nil {
			return // Judge only ever sees validated messages
		}
		err := courierexec.Judge(courierexec.Run{ExitCode: exit, Stdout: stdout}, name, text)
		if err != nil {
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "Judge returned a non-refusal: %v", err)
			assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
			return
		}
		assert.Zero(t, exit, "accepted a non-zero exit")
		out, perr := courierexec.ParseOutput(stdout)
		require.NoError(t, perr, "accepted unparsable output")
		assert.True(t, hasExactSend(out.Messages, name, text),
			"Judge accepted output without a SendMessage of exactly %q to %q:\n%s", text, name, stdout)
	})
}

// hasExactSend decodes messages generically (exact keys, last duplicate
// wins as in JavaScript) and looks for the SendMessage call.
func hasExactSend(msgs []json.RawMessage, name, text string) bool {
	for _, raw := range msgs {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		inner, _ := m["message"].(map[string]any)
		blocks, _ := inner["content"].([]any)
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			if blk["type"] != "tool_use" || blk["name"] != "SendMessage" {
				continue
			}
			in, _ := blk["input"].(map[string]any)
			if to, ok := in["to"].(string); ok && to == name {
				if msg, ok := in["message"].(string); ok && msg == text {
					return true
				}
			}
		}
	}
	return false
}
