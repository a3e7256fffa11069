package fsregistry

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastSeeds are JSON values of every kind, escapes and odd bytes included.
var fastSeeds = []string{
	`"4652"`, `""`, `"proj-89"`, `"build:main 50% ünï"`, `"a\"b"`, `"\u00e9"`, `"tab\there"`, "\"\xff\"", "\"\xc3\"",
	`"ü\b"`, `"é\"x"`, `"日本\u0041"`,
	`12`, `-3`, `0`, `1.5`, `1e3`, `-0.0e-7`, `99999999999999999999`, `null`, `true`, `false`, `[]`, `{}`, `[1,"a"]`,
	`{"a":"b"}`,
}

// FuzzFastString: whenever fastString accepts a JSON value, json.Unmarshal
// into a string gives the same text.
func FuzzFastString(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		raw = bytes.TrimSpace(raw) // a RawMessage field holds the value alone
		got, ok := fastString(raw)
		if !ok {
			return
		}
		var want string
		require.NoError(t, json.Unmarshal(raw, &want))
		assert.Equal(t, want, got)
	})
}

// FuzzFastNumber: whenever fastNumber accepts a JSON value, json.Unmarshal
// into a json.Number gives the same text.
func FuzzFastNumber(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		raw = bytes.TrimSpace(raw)
		got, ok := fastNumber(raw)
		if !ok {
			return
		}
		var want json.Number
		require.NoError(t, json.Unmarshal(raw, &want))
		assert.Equal(t, want.String(), got)
	})
}

func TestFastPathsDeclineWhatNeedsDecoding(t *testing.T) {
	// An escape after a non-ASCII letter still needs decoding (CI's fuzz run
	// found `"̠\b"` taken as it stood).
	for _, raw := range []string{`"a\"b"`, `"\u00e9"`, "\"\xff\"", `"ü\b"`, `"é\"x"`, `"日本\u0041"`, "\"\xcc\xa0\\b\"", `null`, `true`, `[]`, `{}`} {
		_, ok := fastString([]byte(raw))
		assert.False(t, ok, "fastString(%s)", raw)
	}
	for _, raw := range []string{`"12"`, `null`, `true`, `[]`, `{}`} {
		_, ok := fastNumber([]byte(raw))
		assert.False(t, ok, "fastNumber(%s)", raw)
	}
	s, ok := fastString([]byte(`"build:main 50% ünï"`))
	assert.True(t, ok)
	assert.Equal(t, "build:main 50% ünï", s)
}
