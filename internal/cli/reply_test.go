package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/lines"
	"github.com/peerctl/peerctl/ports/wire"
)

func TestReadRelayLines(t *testing.T) {
	long := strings.Repeat("x", lines.MaxRequest+10)
	in := "{\"to\":\"a\",\"text\":\"1\"}\n\n   \n" + long + "\n{\"to\":\"b\",\"text\":\"2\"}" // no newline at the end
	lines := make(chan relayLine, 16)
	readRelayLines(strings.NewReader(in), lines)
	var got []relayLine
	for l := range lines {
		got = append(got, l)
	}
	require.Len(t, got, 3)
	assert.Equal(t, 1, got[0].n)
	assert.Equal(t, "{\"to\":\"a\",\"text\":\"1\"}\n", string(got[0].text))
	assert.Equal(t, 4, got[1].n)
	assert.ErrorContains(t, got[1].err, "over 1048576 bytes")
	assert.Equal(t, 5, got[2].n)
	assert.Equal(t, "{\"to\":\"b\",\"text\":\"2\"}", string(got[2].text))
}

func TestRelayRefusesBadLinesBeforeSending(t *testing.T) {
	c := &relayServer{}
	for line, want := range map[string]string{
		`not json`:                         "want {",
		`{"to":"a","text":"x","extra":1}`:  `unknown key "extra"`,
		`{"text":"x"}`:                     `"to"`,
		`{"to":"","text":"x"}`:             `"to"`,
		`{"to":"a"}`:                       `"text" is missing`,
		`{"to":"a","text":"x"} {"to":"b"}`: "one JSON object per line",
		`["to","a"]`:                       "the line is a JSON array, not an object",
		`5`:                                "the line is a JSON number, not an object",
		`{"to":1,"text":"x"}`:              `"to" is a JSON number, want a string`,
		`{"to":"a","text":{"a":1}}`:        `"text" is a JSON object, want a string`,
		`{"to":"a","text":`:                "ends before it is complete",
		`{"to":"a",,}`:                     "the line is not valid JSON (it goes wrong at byte 11)",
	} {
		// A nil relay: any send would panic, so these never reach it.
		out := c.send(t.Context(), relayLine{n: 7, text: []byte(line)})
		r, ok := out.(wire.RelayRefusal)
		require.True(t, ok, "%s: %T", line, out)
		assert.Equal(t, "invalid_request", r.Reason, line)
		assert.Equal(t, 7, r.Line)
		assert.Contains(t, r.Detail, want, line)
		// The detail is in the request's words, never the program's.
		assert.NotContains(t, r.Detail, "Go ", line)
		assert.NotContains(t, r.Detail, "relayIn", line)
	}
}

// A line JSON decoding would change (bytes that are not UTF-8, a lone
// surrogate escape) is refused, never sent with U+FFFD in their place:
// invalid_message when it is in the text, invalid_request elsewhere.
func TestRelayRefusesLinesThatDecodeInexactly(t *testing.T) {
	c := &relayServer{}
	for line, want := range map[string][2]string{
		`{"id":1,"to":"a","text":"lone \ud800 surrogate"}`:  {"invalid_message", `\ud800`},
		"{\"id\":1,\"to\":\"a\",\"text\":\"bad \xff\xfe\"}": {"invalid_message", "not UTF-8"},
		"{\"id\":1,\"to\":\"a\xff\",\"text\":\"fine\"}":     {"invalid_request", "not UTF-8"},
	} {
		// A nil relay: any send would panic, so these never reach it.
		out := c.send(t.Context(), relayLine{n: 3, text: []byte(line)})
		r, ok := out.(wire.RelayRefusal)
		require.True(t, ok, "%q: %T", line, out)
		assert.Equal(t, want[0], r.Reason, line)
		assert.Equal(t, `1`, string(r.ID), line)
		assert.Contains(t, r.Detail, want[1], line)
		assert.Contains(t, r.Detail, "line 3", line)
	}
	// An id that is itself inexact is not echoed (the output stays UTF-8).
	out := c.send(t.Context(), relayLine{n: 4, text: []byte("{\"id\":\"\xff\",\"to\":\"a\",\"text\":\"x\"}")})
	r, ok := out.(wire.RelayRefusal)
	require.True(t, ok, "%T", out)
	assert.Equal(t, "invalid_request", r.Reason)
	assert.Nil(t, r.ID)
}

// Keys are read exactly and a key given twice is refused: encoding/json
// would match "TO" to "to" and let the last of the two win, so
// {"to":"nosuch","TO":"lis"} was sent to lis. A refusal for a field of the
// wrong type keeps the line's id.
func TestRelayReadsKeysExactlyAndRefusesDuplicates(t *testing.T) {
	c := &relayServer{}
	for line, want := range map[string]string{
		`{"id":1,"to":"nosuch","TO":"lis","text":"x"}`: `unknown key "TO"`,
		`{"id":1,"To":"lis","text":"x"}`:               `unknown key "To"`,
		`{"id":1,"to":"a","to":"lis","text":"x"}`:      `"to" appears more than once`,
		`{"id":1,"to":"a","t\u006f":"lis","text":"x"}`: `"to" appears more than once`,
		`{"id":1,"id":2,"to":"a","text":"x"}`:          `"id" appears more than once`,
		`{"id":1,"to":"a","text":"x","tęxt":"y"}`:      `unknown key "tęxt"`,
		`{"id":1,"to":7,"text":"x"}`:                   `"to" is a JSON number, want a string`,
		`{"text":["x"],"id":1,"to":"a"}`:               `"text" is a JSON array, want a string`,
	} {
		// A nil relay: any send would panic, so these never reach it.
		out := c.send(t.Context(), relayLine{n: 2, text: []byte(line)})
		r, ok := out.(wire.RelayRefusal)
		require.True(t, ok, "%s: %T", line, out)
		assert.Equal(t, "invalid_request", r.Reason, line)
		assert.Contains(t, r.Detail, want, line)
		if !strings.Contains(line, `"id":2`) {
			assert.Equal(t, "1", string(r.ID), "the line's id is kept: %s", line)
		}
	}
}
