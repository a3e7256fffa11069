package courierexec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
)

// verbose builds a courier transcript with one SendMessage tool_use whose
// block and input are given as raw JSON, its tool result, and a SENT result.
func verbose(block, result string) []byte {
	return []byte(`[{"type":"assistant","message":{"content":[` + block + `]}},` +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":false}]}},` +
		result + `]`)
}

const sentResult = `{"type":"result","subtype":"success","is_error":false,"result":"SENT"}`

// Keys that differ only in case from what Claude Code writes must not count:
// encoding/json would match them, Claude Code's JavaScript does not (found
// by FuzzJudge).
func TestJudgeReadsKeysExactly(t *testing.T) {
	const name, text = "a", "good"
	tests := []struct {
		desc   string
		stdout []byte
		accept bool
	}{
		{"exact keys", verbose(`{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","message":"good"}}`, sentResult), true},
		{"message key in another case wins over the real one", verbose(`{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","message":"evil","Message":"good"}}`, sentResult), false},
		{"only a MESSAGE key", verbose(`{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","MESSAGE":"good"}}`, sentResult), false},
		{"To instead of to", verbose(`{"type":"tool_use","id":"t1","name":"SendMessage","input":{"To":"a","message":"good"}}`, sentResult), false},
		{"tool name under Name", verbose(`{"type":"tool_use","id":"t1","name":"Other","Name":"SendMessage","input":{"to":"a","message":"good"}}`, sentResult), false},
		{"duplicate key, last wins as in JavaScript", verbose(`{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","message":"good","message":"evil"}}`, sentResult), false},
		{"IS_ERROR cannot hide is_error", verbose(`{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","message":"good"}}`,
			`{"type":"result","is_error":true,"Is_Error":false,"result":"SENT"}`), false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := courierexec.Judge(courierexec.Run{Stdout: tc.stdout}, name, text)
			if tc.accept {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// The constructed seed must be accepted, so FuzzJudge exercises its oracle.
func TestJudgeAcceptsConstructedSeed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "constructed-verbose-sent.json"))
	require.NoError(t, err)
	assert.NoError(t, courierexec.Judge(courierexec.Run{Stdout: b}, seedName, seedText))
	err = courierexec.Judge(courierexec.Run{Stdout: b}, seedName, strings.ToUpper(seedText))
	assert.ErrorContains(t, err, "altered text")
}

// TestJudgeCountsOnlyWhatClaudeCodeWrites: a call counts only as an
// assistant's tool_use before the result, and any error result for it fails
// the call, whatever other results say.
func TestJudgeCountsOnlyWhatClaudeCodeWrites(t *testing.T) {
	const name, text = "a", "good"
	const (
		use       = `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","message":"good"}}]}}`
		useUser   = `{"type":"user","message":{"content":[{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"a","message":"good"}}]}}`
		use2      = `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"SendMessage","input":{"to":"b","message":"good"}}]}}`
		ok        = `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":false}]}}`
		okAsst    = `{"type":"assistant","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":false}]}}`
		bad       = `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true}]}}`
		badAsst   = `{"type":"assistant","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true}]}}`
		bothInOne = `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true},{"type":"tool_result","tool_use_id":"t1","is_error":false}]}}`
	)
	arr := func(msgs ...string) []byte { return []byte("[" + strings.Join(msgs, ",") + "]") }
	tests := []struct {
		family, desc string
		stdout       []byte
		want         string // "" accepts
	}{
		{"baseline", "one call, one good result", arr(use, ok, sentResult), ""},

		{"error results", "error then success", arr(use, bad, ok, sentResult), "call failed"},
		{"error results", "success then error", arr(use, ok, bad, sentResult), "call failed"},
		{"error results", "error and success in one message", arr(use, bothInOne, sentResult), "call failed"},
		{"error results", "error in an assistant message", arr(use, ok, badAsst, sentResult), "call failed"},
		{"error results", "only an error", arr(use, bad, sentResult), "call failed"},

		{"message roles", "tool_use in a user message", arr(useUser, ok, sentResult), "made no SendMessage call"},
		{"message roles", "user tool_use beside the real one", arr(use, useUser, ok, sentResult), ""},
		{"message roles", "success result only in an assistant message", arr(use, okAsst, sentResult), "has no tool result"},

		{"after the result", "call after the result", arr(sentResult, use, ok), "made no SendMessage call"},
		{"after the result", "result of the call after the result", arr(use, sentResult, ok), "has no tool result"},
		{"after the result", "error after the result is not read", arr(use, ok, sentResult, bad), ""},
		{"after the result", "second call after the result is not read", arr(use, ok, sentResult, use2), ""},
		{"after the result", "second call before the result", arr(use, ok, use2, sentResult), "2 SendMessage calls"},
		{"after the result", "earlier result, call, last result", arr(sentResult, use, ok, sentResult), ""},
	}
	for _, tc := range tests {
		t.Run(tc.family+"/"+tc.desc, func(t *testing.T) {
			err := courierexec.Judge(courierexec.Run{Stdout: tc.stdout}, name, text)
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.want)
			}
		})
	}
}
