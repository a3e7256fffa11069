package jsonexact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Exact decodes data, exactly one JSON value, into v (a non-nil pointer)
// with every object at every depth held to the keys v's type names there:
// spelled exactly (encoding/json alone would match "NAME" to "name"), each
// at most once, none unknown. Embedded structs' fields count as their
// parent's, as encoding/json flattens them. A map takes any keys (each
// once); a json.RawMessage, an interface or another json.Unmarshaler takes
// any value. It is how peerctl reads what another machine's peerctl
// printed: a document of another shape is refused, not half-read.
// Errors about keys are *KeyError values.
func Exact(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("jsonexact: Exact needs a non-nil pointer, not %T", v)
	}
	if !json.Valid(data) {
		var probe json.RawMessage
		return json.Unmarshal(data, &probe)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, rv.Type().Elem()); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

var (
	rawType         = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// free reports whether t takes any JSON value (nil: no type to hold to).
func free(t reflect.Type) bool {
	return t == nil || t == rawType || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)
}

func walk(dec *json.Decoder, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if free(t) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: json.Unmarshal checks its type
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walk(dec, elem); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			fields = map[string]reflect.Type{}
			fieldsOf(t, fields)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		default:
			return fmt.Errorf("a JSON object where %s is wanted", t)
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			if seen[key] {
				return &KeyError{Key: key, Duplicate: true}
			}
			seen[key] = true
			vt := elem
			if fields != nil {
				var known bool
				if vt, known = fields[key]; !known {
					return &KeyError{Key: key}
				}
			}
			if err := walk(dec, vt); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// fieldsOf adds t's JSON keys and their types to out, embedded structs'
// flattened.
func fieldsOf(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fieldsOf(ft, out)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := out[name]; !dup {
			out[name] = sf.Type
		}
	}
}
