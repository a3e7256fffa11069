// Package jsonexact decodes one level of a JSON object the way JavaScript's
// JSON.parse reads it, which is how Claude Code reads the files peerctl
// also reads (registry records, transcript lines, courier output).
//
// encoding/json matches an object's keys to struct fields without regard to
// case (and with Unicode folding: "ſ" matches "s"), so {"name":"a","Name":"b"}
// decodes as "b" where Claude Code sees "a". Unmarshal matches keys exactly;
// as in JavaScript, the last of duplicate keys wins, and escaped keys
// ("n\u0061me") count as what they spell.
//
// Why not github.com/go-json-experiment/json (encoding/json/v2's prototype,
// case-sensitive by default)? Compared on the same inputs with node's
// JSON.parse after TextDecoder (what Claude Code does), v1.27.2 refuses
// duplicate names and invalid UTF-8 by default, where JSON.parse accepts
// both; with AllowDuplicateNames and AllowInvalidUTF8 it still lets an
// earlier duplicate show through ({"pid":1,"pid":"x"} keeps pid 1; JSON.parse
// says "x") and merges duplicate objects ({"o":{"a":1},"o":{"b":2}} becomes
// {a:1,b:2}; JSON.parse keeps {b:2}). It is also about 21,000 lines more
// in every peerctl binary. Invalid UTF-8 is one U+FFFD per bad byte in
// both, where Claude Code's decoder makes one per maximal subpart: callers
// that need that exactness repair the bytes first (fsregistry/utf8.go).
//
// Requests peerctl reads (relay lines, MCP messages and tool arguments) are
// decoded with Strict: the same exact keys, but a key given twice or a key
// no field names is an error (a *KeyError), so what peerctl acts on is
// what every reader of the line sees.
package jsonexact

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Unmarshal decodes the JSON object data into v, a non-nil pointer to a
// struct, setting only the fields whose json tag names a key of the object
// exactly; the last of duplicate keys wins. A json.RawMessage field is set
// to a slice of data (not a copy): keep data unchanged while v is in use.
// Other values are decoded with encoding/json (so a nested object is
// matched leniently: call Unmarshal again on a json.RawMessage field for
// exact keys one level down). A value of the wrong type leaves its field
// unset and the others are still decoded; the first such error is
// returned, as json.Unmarshal does. data that is not exactly one JSON
// object (null, an array, a string, a number, trailing data) is an error.
//
// A value of the wrong type is a *json.UnmarshalTypeError whose Field is
// the key.
func Unmarshal(data []byte, v any) error { return Options{}.Unmarshal(data, v) }

// Strict is Options{NoDuplicates: true, NoUnknown: true}: how requests are read.
var Strict = Options{NoDuplicates: true, NoUnknown: true}

// Options are what Unmarshal refuses beyond malformed JSON; the zero value
// refuses nothing (JavaScript's JSON.parse).
type Options struct {
	// NoDuplicates refuses an object with a key given twice (as it
	// spells: "n\u0061me" and "name" are one key).
	NoDuplicates bool
	// NoUnknown refuses a key that no field's json tag names exactly.
	NoUnknown bool
}

// A KeyError is a key Options refuse: given twice, or unknown.
type KeyError struct {
	Key       string
	Duplicate bool
	// Missing: a key the document must have is not there (Complete).
	Missing bool
}

func (e *KeyError) Error() string {
	if e.Missing {
		return fmt.Sprintf("key %q is missing", e.Key)
	}
	if e.Duplicate {
		return fmt.Sprintf("key %q appears more than once", e.Key)
	}
	return fmt.Sprintf("unknown key %q", e.Key)
}

// Unmarshal is the package's Unmarshal, also refusing what o says (the
// first such key is the error, and nothing is decoded).
func (o Options) Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("jsonexact: Unmarshal needs a pointer to a struct, not %T", v)
	}
	if !json.Valid(data) {
		var probe json.RawMessage
		return json.Unmarshal(data, &probe) // says what is wrong, and where
	}
	if err := objectOnly(data); err != nil {
		return err
	}
	st := rv.Elem()
	idx := indexOf(st.Type())
	// The last value of each field's key, found in one pass over data.
	var small [32][]byte
	vals := small[:0]
	if len(idx.keys) > len(small) {
		vals = make([][]byte, 0, len(idx.keys))
	}
	vals = vals[:len(idx.keys)]
	var keyErr error
	var seen map[string]bool // with NoDuplicates: every key so far
	if o.NoDuplicates {
		seen = map[string]bool{}
	}
	eachMember(data, func(key []byte, escaped bool, val []byte) {
		if keyErr != nil {
			return
		}
		var name string
		if !escaped {
			// string(...) in a map index does not copy: the common case
			// (no options) allocates nothing.
			if i, ok := idx.keys[string(key[1:len(key)-1])]; seen == nil && (ok || !o.NoUnknown) {
				if ok {
					vals[i] = val
				}
				return
			}
			name = string(key[1 : len(key)-1])
		} else if err := json.Unmarshal(key, &name); err != nil {
			keyErr = err // cannot happen: data is valid JSON
			return
		}
		if seen != nil {
			if seen[name] {
				keyErr = &KeyError{Key: name, Duplicate: true}
				return
			}
			seen[name] = true
		}
		i, ok := idx.keys[name]
		switch {
		case ok:
			vals[i] = val
		case o.NoUnknown:
			keyErr = &KeyError{Key: name}
		}
	})
	if keyErr != nil {
		return keyErr
	}
	var first error
	for i, val := range vals {
		if val == nil {
			continue
		}
		f := st.Field(idx.fields[i])
		if f.Type() == rawMessage {
			f.SetBytes(val)
			continue
		}
		if err := json.Unmarshal(val, f.Addr().Interface()); err != nil && first == nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "" {
				te.Field = idx.names[i]
			}
			first = err
		}
	}
	return first
}

// index maps a struct type's json keys to field numbers.
type index struct {
	keys   map[string]int // key -> position in fields
	fields []int          // struct field numbers
	names  []string       // the keys, by position
}

var indexes sync.Map // reflect.Type -> *index

func indexOf(t reflect.Type) *index {
	if x, ok := indexes.Load(t); ok {
		return x.(*index)
	}
	ix := &index{keys: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if key == "" || key == "-" || !sf.IsExported() {
			continue
		}
		if _, dup := ix.keys[key]; dup {
			continue // encoding/json would ignore both; the first is kept here
		}
		ix.keys[key] = len(ix.fields)
		ix.fields = append(ix.fields, i)
		ix.names = append(ix.names, key)
	}
	x, _ := indexes.LoadOrStore(t, ix)
	return x.(*index)
}

// eachMember calls fn with each member of the object data, in order: its
// key as written (quotes included), whether the key has escapes, and its
// value as written. data must be valid JSON holding one object.
func eachMember(data []byte, fn func(key []byte, escaped bool, val []byte)) {
	i := skipSpace(data, 0) + 1 // past '{'
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			return
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end, escaped := stringEnd(data, i)
		key := data[i:end]
		i = skipSpace(data, end) + 1 // past ':'
		i = skipSpace(data, i)
		vend := valueEnd(data, i)
		fn(key, escaped, data[i:vend])
		i = vend
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal starting at i,
// and whether it holds an escape.
func stringEnd(data []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; ; j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
}

// valueEnd returns the index just past the JSON value starting at i.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		end, _ := stringEnd(data, i)
		return end
	case '{', '[':
		end, _ := nested(data, i)
		return end
	default: // number, true, false, null
		j := i
		for j < len(data) && !strings.ContainsRune(",}] \t\r\n", rune(data[j])) {
			j++
		}
		return j
	}
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// ErrNotObject is matched (errors.Is) by the error for data that is valid
// JSON but not an object; its text says what the data is instead.
var ErrNotObject = errors.New("not a JSON object")

type notObject string

func (e notObject) Error() string        { return string(e) + ", not an object" }
func (e notObject) Is(target error) bool { return target == ErrNotObject }

// objectOnly refuses valid JSON data whose value is not an object, in
// words a user can read.
func objectOnly(data []byte) error {
	switch c := data[skipSpace(data, 0)]; {
	case c == '{':
		return nil
	case c == '[':
		return notObject("a JSON array")
	case c == '"':
		return notObject("a JSON string")
	case c == 'n':
		return notObject("JSON null")
	case c == 't' || c == 'f':
		return notObject("a JSON boolean")
	default:
		return notObject("a JSON number")
	}
}

// Duplicate returns the first key given twice in one object anywhere in
// the JSON text data (nested objects and arrays included), as it spells;
// ok is false when there is none. data must be valid JSON.
func Duplicate(data []byte) (key string, ok bool) {
	return duplicateIn(data, skipSpace(data, 0))
}

// duplicateIn is Duplicate for the value at data[i:].
func duplicateIn(data []byte, i int) (string, bool) {
	switch data[i] {
	case '{':
		var seen map[string]bool
		var dup string
		found := false
		eachMember(data[i:], func(key []byte, escaped bool, val []byte) {
			if found {
				return
			}
			name := string(key[1 : len(key)-1])
			if escaped {
				_ = json.Unmarshal(key, &name) // valid JSON: cannot fail
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			if seen[name] {
				dup, found = name, true
				return
			}
			seen[name] = true
			dup, found = duplicateIn(val, 0)
		})
		return dup, found
	case '[':
		j := skipSpace(data, i+1)
		for data[j] != ']' {
			if dup, ok := duplicateIn(data, j); ok {
				return dup, true
			}
			j = skipSpace(data, valueEnd(data, j))
			if data[j] == ',' {
				j = skipSpace(data, j+1)
			}
		}
	}
	return "", false
}

// Depth is how deeply the JSON text data nests: 0 for a number, string,
// boolean or null, 1 for an object or array of those, and so on. data
// must be valid JSON.
func Depth(data []byte) int {
	i := skipSpace(data, 0)
	if data[i] != '{' && data[i] != '[' {
		return 0
	}
	_, deepest := nested(data, i)
	return deepest
}

// nested scans the object or array starting at i: the index just past it,
// and how deeply it nests.
func nested(data []byte, i int) (end, deepest int) {
	depth := 0
	for j := i; ; j++ {
		switch data[j] {
		case '"':
			end, _ := stringEnd(data, j)
			j = end - 1
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, deepest
			}
		}
	}
}
