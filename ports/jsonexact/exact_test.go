package jsonexact_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/jsonexact"
)

type inner struct {
	Word string `json:"word"`
}

type base struct {
	Name string `json:"name"`
}

type doc struct {
	base
	Items []inner         `json:"items"`
	Ptr   *inner          `json:"ptr,omitempty"`
	Tags  map[string]int  `json:"tags"`
	Any   any             `json:"any"`
	Raw   json.RawMessage `json:"raw"`
	Skip  string          `json:"-"`
}

func TestExact(t *testing.T) {
	var d doc
	require.NoError(t, jsonexact.Exact([]byte(`{"name":"a","items":[{"word":"w"}],"ptr":{"word":"p"},"tags":{"X":1},"any":{"Whatever":[1]},"raw":{"k":1}}`), &d))
	assert.Equal(t, "a", d.Name)
	assert.Equal(t, "p", d.Ptr.Word)

	var list []doc
	require.NoError(t, jsonexact.Exact([]byte(`[{"name":"a"},{"name":"b"}]`), &list))
	assert.Len(t, list, 2)

	for name, bad := range map[string]string{
		"case":            `{"Name":"a"}`,
		"unknown":         `{"name":"a","extra":1}`,
		"duplicate":       `{"name":"a","name":"b"}`,
		"nested case":     `{"items":[{"Word":"w"}]}`,
		"nested unknown":  `{"ptr":{"word":"p","x":1}}`,
		"map duplicate":   `{"tags":{"X":1,"X":2}}`,
		"array element":   `[{"name":"a"},{"nam":"b"}]`,
		"two values":      `{"name":"a"} {}`,
		"not json":        `{"name":`,
		"skipped field":   `{"Skip":"x"}`,
		"object for list": `{"items":{"word":"w"}}`,
	} {
		var v any = &d
		if name == "array element" {
			v = &list
		}
		assert.Error(t, jsonexact.Exact([]byte(bad), v), name)
	}
	var ke *jsonexact.KeyError
	assert.ErrorAs(t, jsonexact.Exact([]byte(`{"name":"a","name":"b"}`), &d), &ke)
}
