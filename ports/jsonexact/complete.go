package jsonexact

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Complete reports a *KeyError for the first key that v's type always
// writes and data lacks: every field without omitempty, at the top and in
// each nested struct (not behind a pointer, a slice or a map), embedded
// structs' fields counting as their parent's. Exact refuses keys a
// document must not have; Complete those it must have, so that a far
// side's `{}` is not read as a document of zero values.
func Complete(data []byte, v any) error {
	return complete(data, reflect.TypeOf(v), "")
}

func complete(data []byte, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	var walk func(reflect.Type) error
	walk = func(t reflect.Type) error {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				if err := walk(f.Type); err != nil {
					return err
				}
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			raw, ok := obj[name]
			if !ok {
				if strings.Contains(opts, "omitempty") {
					continue
				}
				return &KeyError{Key: at + name, Missing: true}
			}
			if f.Type.Kind() == reflect.Struct {
				if err := complete(raw, f.Type, at+name+"."); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(t)
}
