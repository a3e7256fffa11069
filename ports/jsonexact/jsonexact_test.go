package jsonexact

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rec struct {
	Name  string          `json:"name"`
	PID   int             `json:"pid"`
	Raw   json.RawMessage `json:"raw"`
	Inner struct {
		Kind string `json:"kind"`
	} `json:"inner"`
	Untagged string
}

func TestUnmarshalReadsKeysAsJavaScriptDoes(t *testing.T) {
	tests := []struct {
		name, json string
		want       rec
	}{
		{"exact keys", `{"name":"a","pid":7}`, rec{Name: "a", PID: 7}},
		{"another case is another key", `{"name":"a","Name":"b","NAME":"c"}`, rec{Name: "a"}},
		{"another case alone sets nothing", `{"Name":"b","PID":3}`, rec{}},
		{"a folding letter is another key", `{"naſme":"x","name":"a"}`, rec{Name: "a"}},
		{"last duplicate wins", `{"name":"a","name":"b"}`, rec{Name: "b"}},
		{"escaped key counts as what it spells", `{"n\u0061me":"a"}`, rec{Name: "a"}},
		{"raw value kept as written", `{"raw": {"x" : 1}}`, rec{Raw: json.RawMessage(`{"x" : 1}`)}},
		{"untagged fields untouched", `{"Untagged":"u"}`, rec{}},
		{"values of every kind skipped whole", `{"a":[1,{"name":"x"},"]}"],"b":{"c":"}"},"c":-1.5e3,"d":true,"e":null,"f":"\"name\"","name" : "a" }`, rec{Name: "a"}},
		{"escapes in values and keys", `{"x\"":"\\","name":"q\"\\"}`, rec{Name: `q"\`}},
		{"null leaves a field unset", `{"name":null}`, rec{}},
		// JSON.parse keeps only the last of duplicate keys: an earlier
		// value never shows through (go-json-experiment/json with
		// AllowDuplicateNames keeps pid 1 in the first case, and merges
		// the two objects into {"a":"1","b":"2"} in the second).
		{"a last duplicate null unsets", `{"name":"a","name":null}`, rec{}},
		{"duplicate objects: the last whole, no merge", `{"raw":{"a":"1"},"raw":{"b":"2"}}`, rec{Raw: json.RawMessage(`{"b":"2"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got rec
			require.NoError(t, Unmarshal([]byte(tt.json), &got))
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUnmarshalNestedLevelsAreEncodingJSONs(t *testing.T) {
	var got rec
	require.NoError(t, Unmarshal([]byte(`{"inner":{"KIND":"peer"}}`), &got))
	assert.Equal(t, "peer", got.Inner.Kind, "one level only: documented")
}

// JSON.parse({"pid":1,"pid":"x"}).pid is "x": not a number, so the field
// stays unset; the first duplicate's 1 never shows through.
func TestUnmarshalLastDuplicateOfTheWrongTypeLeavesTheFieldUnset(t *testing.T) {
	var got rec
	err := Unmarshal([]byte(`{"pid":1,"pid":"x","name":"a"}`), &got)
	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, err, &typeErr)
	assert.Zero(t, got.PID)
	assert.Equal(t, "a", got.Name)
}

func TestUnmarshalTypeErrorKeepsTheRest(t *testing.T) {
	var got rec
	err := Unmarshal([]byte(`{"pid":"seven","name":"a"}`), &got)
	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, err, &typeErr)
	assert.Equal(t, "a", got.Name)
	assert.Zero(t, got.PID)
}

func TestUnmarshalRefusesAllButOneObject(t *testing.T) {
	for in, want := range map[string]string{
		``:              "unexpected end of JSON input",
		`  `:            "unexpected end of JSON input",
		`null`:          "JSON null, not an object",
		` []`:           "a JSON array, not an object",
		`"x"`:           "a JSON string, not an object",
		`true`:          "a JSON boolean, not an object",
		`-1.5`:          "a JSON number, not an object",
		`{"name":"a"}x`: "invalid character 'x' after top-level value",
		`{"name":`:      "unexpected end of JSON input",
		`nul`:           "invalid character",
	} {
		var got rec
		err := Unmarshal([]byte(in), &got)
		require.Error(t, err, "%q", in)
		assert.Contains(t, err.Error(), want, "%q", in)
		assert.Equal(t, strings.HasSuffix(want, "not an object"), errors.Is(err, ErrNotObject), "%q", in)
	}
}

func TestUnmarshalNeedsAPointerToAStruct(t *testing.T) {
	var m map[string]string
	var r *rec
	for _, v := range []any{m, &m, r, rec{}} {
		assert.ErrorContains(t, Unmarshal([]byte(`{}`), v), "needs a pointer to a struct")
	}
}

// refUnmarshal is Unmarshal done the plain way: a map of the object's
// members (exact keys, the last duplicate winning), then each field.
func refUnmarshal(data []byte, v *rec) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("null")
	}
	var first error
	set := func(key string, dst any) {
		if raw, ok := m[key]; ok {
			if err := json.Unmarshal(raw, dst); err != nil && first == nil {
				first = err
			}
		}
	}
	set("name", &v.Name)
	set("pid", &v.PID)
	set("raw", &v.Raw)
	set("inner", &v.Inner)
	return first
}

// FuzzUnmarshal: Unmarshal's one-pass scan gives what the plain way gives,
// for any bytes.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{"name":"a","Name":"b"}`, `{"pid":1,"pid":2}`, `{"n\u0061me":"x"}`, `{}`, `null`, `[1]`,
		`{"raw":[1,{"a":"]"}],"name":"\"","inner":{"KIND":"k"},"pid":"x"}`, ` { "pid" : 1 } `, `{"name":"a"} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want rec
		err := Unmarshal(data, &got)
		refErr := refUnmarshal(data, &want)
		require.Equal(t, refErr == nil, err == nil, "errors: %v vs plain %v", err, refErr)
		if len(want.Raw) == 0 {
			want.Raw = nil
		}
		assert.Equal(t, want, got)
	})
}

func TestStrictRefusesDuplicateAndUnknownKeys(t *testing.T) {
	tests := []struct {
		json string
		want *KeyError
	}{
		{`{"name":"a","name":"b"}`, &KeyError{Key: "name", Duplicate: true}},
		{`{"name":"a","n\u0061me":"b"}`, &KeyError{Key: "name", Duplicate: true}},
		{`{"zz":1,"zz":2}`, &KeyError{Key: "zz"}}, // unknown comes first
		{`{"name":"a","Name":"b"}`, &KeyError{Key: "Name"}},
		{`{"naſme":"x"}`, &KeyError{Key: "naſme"}},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var got rec
			err := Strict.Unmarshal([]byte(tt.json), &got)
			var ke *KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, tt.want, ke)
		})
	}
	var got rec
	require.NoError(t, Strict.Unmarshal([]byte(`{"name":"a","pid":1}`), &got))
	assert.Equal(t, rec{Name: "a", PID: 1}, got)
	// Only duplicates: unknown keys pass.
	require.NoError(t, Options{NoDuplicates: true}.Unmarshal([]byte(`{"x":1,"name":"b"}`), &got))
	assert.Equal(t, "b", got.Name)
}

// A value of the wrong type names its key, as encoding/json's decoder does.
func TestUnmarshalTypeErrorNamesTheKey(t *testing.T) {
	var got rec
	err := Unmarshal([]byte(`{"pid":"x","name":"a"}`), &got)
	var te *json.UnmarshalTypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "pid", te.Field)
	assert.Equal(t, "a", got.Name, "the other fields are still decoded")
}

func TestDuplicateLooksAtEveryDepth(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":2}`:                         "",
		`{"a":1,"a":2}`:                         "a",
		`{"a":{"b":1,"b":2}}`:                   "b",
		`[1,{"x":[{"c":1,"\u0063":2}]}]`:        "c",
		`{"a":{"b":1},"c":{"b":2}}`:             "",
		`{"s":"{\"a\":1,\"a\":2}"}`:             "",
		` [ {"a":1} , {"a":2} , {"d":0,"d":0}]`: "d",
		`"x"`:                                   "",
		`[]`:                                    "",
	} {
		got, ok := Duplicate([]byte(in))
		assert.Equal(t, want, got, in)
		assert.Equal(t, want != "", ok, in)
	}
}

func TestDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `"[{"`: 0, `[]`: 1, `{"a":[1,{"b":"]]]"}]}`: 3, `[[],[[]]]`: 3,
	} {
		assert.Equal(t, want, Depth([]byte(in)), in)
	}
}
