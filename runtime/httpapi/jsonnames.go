package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/weft-run/weft/runtime/fault"
)

// checkMemberNames walks the JSON document data alongside the Go type t and
// rejects an object member whose name matches no json tag of t exactly
// (encoding/json matches names without regard to case, so "MODULE" would
// fill module) and an object that names a member twice (encoding/json keeps
// the last). Both are invalid_request, with param naming the member by its
// dotted path. data has already decoded into t; values t holds as
// json.RawMessage are parsed strictly where they are used, and values of
// type any are only checked for duplicate names.
func checkMemberNames(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walkMembers(dec, t, "")
}

// walkMembers reads one JSON value from dec, checked against t (nil for
// any).
func walkMembers(dec *json.Decoder, t reflect.Type, prefix string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		t = nil // only duplicates are checked here
	}
	tok, err := dec.Token()
	if err != nil {
		return errorf(fault.Invalid, "", "malformed JSON: %v", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkMembers(dec, elem, fmt.Sprintf("%s%d.", prefix, i)); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return errorf(fault.Invalid, "", "malformed JSON: %v", err)
			}
			name, _ := tok.(string)
			path := prefix + name
			if seen[name] {
				return errorf(fault.Invalid, path, "duplicate field %s", path)
			}
			seen[name] = true
			var member reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Struct:
				f, ok := exactField(t, name)
				if !ok {
					return errorf(fault.Invalid, path, "unknown field %s (member names are case-sensitive)", path)
				}
				member = f.Type
			case t.Kind() == reflect.Map:
				member = t.Elem()
			}
			if err := walkMembers(dec, member, path+"."); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	if err != nil {
		return errorf(fault.Invalid, "", "malformed JSON: %v", err)
	}
	return nil
}

// exactField returns the field of struct type t whose JSON name is name,
// exactly, looking into embedded structs as encoding/json does.
func exactField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jsonName, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && jsonName == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if inner, ok := exactField(ft, name); ok {
					return inner, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		if jsonName == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
