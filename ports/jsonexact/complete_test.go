package jsonexact

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type completeInner struct {
	A int `json:"a"`
	B int `json:"b,omitempty"`
}

type completeEmbedded struct {
	E string `json:"e"`
}

type completeDoc struct {
	OK   bool          `json:"ok"`
	In   completeInner `json:"in"`
	Ptr  *int          `json:"ptr,omitempty"`
	List []int         `json:"list"`
	Skip string        `json:"-"`
	completeEmbedded
}

// Complete names the first key a document must have and lacks: at the top,
// in a nested struct, of an embedded struct; omitempty keys may be absent.
func TestComplete(t *testing.T) {
	require.NoError(t, Complete([]byte(`{"ok":true,"in":{"a":1},"list":[],"e":""}`), completeDoc{}))
	for doc, key := range map[string]string{
		`{}`:                                   "ok",
		`{"ok":true,"list":[],"e":""}`:         "in",
		`{"ok":true,"in":{},"list":[],"e":""}`: "in.a",
		`{"ok":true,"in":{"a":1},"e":""}`:      "list",
		`{"ok":true,"in":{"a":1},"list":[]}`:   "e",
	} {
		err := Complete([]byte(doc), completeDoc{})
		var ke *KeyError
		require.ErrorAs(t, err, &ke, doc)
		assert.True(t, ke.Missing, doc)
		assert.Equal(t, key, ke.Key, doc)
	}
}
