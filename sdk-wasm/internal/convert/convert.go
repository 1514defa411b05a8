// Package convert maps Go values to codec.Value and back for the guest SDK's
// typed helpers, the way encoding/json maps Go values to JSON.
//
// To a Value: nil and nil pointers, maps and slices become null; bool becomes
// boolean; every integer type becomes long (a uint64 above MaxInt64 fails);
// float32 and float64 become double; string becomes string; []byte becomes
// bytes; other slices and arrays become list; maps with string keys become
// map, with keys sorted so the bytes are deterministic; structs become map,
// one entry per exported field in declaration order, named by the field's
// json tag when it has one ("-" skips the field, ",omitempty" drops empty
// values); a codec.Value is taken as it is.
//
// From a Value: the reverse, strictly by kind: a long fills any integer
// (range-checked) or float, a double fills only floats, bytes fill []byte,
// a list fills a slice or array, a map fills a struct (unknown keys are
// ignored) or a map with string keys, null leaves the target at its zero
// value. Into an `any`, a Value becomes nil, bool, int64, float64, []byte,
// string, []any or map[string]any.
package convert

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/weft-run/weft/codec"
)

var valueType = reflect.TypeFor[codec.Value]()

// ErrTarget is returned by FromValue when the target is not a non-nil
// pointer.
var ErrTarget = errors.New("convert: target must be a non-nil pointer")

// ToValue converts x to a Value.
func ToValue(x any) (codec.Value, error) {
	switch t := x.(type) {
	case codec.Value:
		return t, nil
	case nil:
		return codec.Null(), nil
	case string:
		return codec.String(t), nil
	case []byte:
		return codec.Bytes(t), nil
	case int64:
		return codec.Long(t), nil
	case int:
		return codec.Long(int64(t)), nil
	case bool:
		return codec.Bool(t), nil
	case float64:
		return codec.Double(t), nil
	}
	return toValue(reflect.ValueOf(x), 0)
}

// maxDepth bounds the recursion of both directions; deeper values are cyclic
// or far beyond what a frame may hold.
const maxDepth = 100

func toValue(rv reflect.Value, depth int) (codec.Value, error) {
	if depth > maxDepth {
		return codec.Value{}, fmt.Errorf("convert: value nested deeper than %d levels (a cycle?)", maxDepth)
	}
	if !rv.IsValid() {
		return codec.Null(), nil
	}
	if rv.Type() == valueType {
		return rv.Interface().(codec.Value), nil
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return codec.Null(), nil
		}
		return toValue(rv.Elem(), depth+1)
	case reflect.Bool:
		return codec.Bool(rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return codec.Long(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return codec.Value{}, fmt.Errorf("convert: %d does not fit a long", u)
		}
		return codec.Long(int64(u)), nil
	case reflect.Float32, reflect.Float64:
		return codec.Double(rv.Float()), nil
	case reflect.String:
		return codec.String(rv.String()), nil
	case reflect.Slice:
		if rv.IsNil() {
			return codec.Null(), nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return codec.Bytes(rv.Bytes()), nil
		}
		return listOf(rv, depth)
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return codec.Bytes(b), nil
		}
		return listOf(rv, depth)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return codec.Value{}, fmt.Errorf("convert: map key type %s is not a string", rv.Type().Key())
		}
		if rv.IsNil() {
			return codec.Null(), nil
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		entries := make([]codec.Entry, len(keys))
		for i, k := range keys {
			v, err := toValue(rv.MapIndex(k), depth+1)
			if err != nil {
				return codec.Value{}, err
			}
			entries[i] = codec.Entry{Key: k.String(), Value: v}
		}
		return codec.Map(entries...), nil
	case reflect.Struct:
		fields := fieldsOf(rv.Type())
		entries := make([]codec.Entry, 0, len(fields))
		for _, f := range fields {
			fv := rv.FieldByIndex(f.index)
			if f.omitEmpty && fv.IsZero() {
				continue
			}
			v, err := toValue(fv, depth+1)
			if err != nil {
				return codec.Value{}, fmt.Errorf("%s: %w", f.name, err)
			}
			entries = append(entries, codec.Entry{Key: f.name, Value: v})
		}
		return codec.Map(entries...), nil
	}
	return codec.Value{}, fmt.Errorf("convert: unsupported type %s", rv.Type())
}

func listOf(rv reflect.Value, depth int) (codec.Value, error) {
	items := make([]codec.Value, rv.Len())
	for i := range items {
		v, err := toValue(rv.Index(i), depth+1)
		if err != nil {
			return codec.Value{}, err
		}
		items[i] = v
	}
	return codec.List(items...), nil
}

// FromValue stores v in the value ptr points to.
func FromValue(v codec.Value, ptr any) error {
	switch p := ptr.(type) {
	case *codec.Value:
		*p = v
		return nil
	case nil:
		return ErrTarget
	case *int64:
		// The common targets skip reflection; a null leaves them at zero.
		if n, ok := v.AsLong(); ok && p != nil {
			*p = n
			return nil
		}
	case *string:
		if s, ok := v.AsString(); ok && p != nil {
			*p = s
			return nil
		}
	case *bool:
		if b, ok := v.AsBool(); ok && p != nil {
			*p = b
			return nil
		}
	}
	rv := reflect.ValueOf(ptr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return ErrTarget
	}
	return fromValue(v, rv.Elem(), 0)
}

func fromValue(v codec.Value, dst reflect.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("convert: value nested deeper than %d levels", maxDepth)
	}
	if dst.Type() == valueType {
		dst.Set(reflect.ValueOf(v))
		return nil
	}
	if v.IsNull() {
		dst.SetZero()
		return nil
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		return fromValue(v, dst.Elem(), depth+1)
	case reflect.Interface:
		if dst.NumMethod() != 0 {
			return fmt.Errorf("convert: cannot fill interface %s", dst.Type())
		}
		dst.Set(reflect.ValueOf(natural(v)))
		return nil
	case reflect.Bool:
		b, ok := v.AsBool()
		if !ok {
			return mismatch(v, dst)
		}
		dst.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := v.AsLong()
		if !ok {
			return mismatch(v, dst)
		}
		if dst.OverflowInt(i) {
			return fmt.Errorf("convert: %d overflows %s", i, dst.Type())
		}
		dst.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		i, ok := v.AsLong()
		if !ok {
			return mismatch(v, dst)
		}
		if i < 0 || dst.OverflowUint(uint64(i)) {
			return fmt.Errorf("convert: %d overflows %s", i, dst.Type())
		}
		dst.SetUint(uint64(i))
		return nil
	case reflect.Float32, reflect.Float64:
		if f, ok := v.AsDouble(); ok {
			dst.SetFloat(f)
			return nil
		}
		if i, ok := v.AsLong(); ok {
			dst.SetFloat(float64(i))
			return nil
		}
		return mismatch(v, dst)
	case reflect.String:
		s, ok := v.AsString()
		if !ok {
			return mismatch(v, dst)
		}
		dst.SetString(s)
		return nil
	case reflect.Slice:
		if dst.Type().Elem().Kind() == reflect.Uint8 {
			b, ok := v.AsBytes()
			if !ok {
				return mismatch(v, dst)
			}
			dst.SetBytes(append([]byte{}, b...))
			return nil
		}
		if v.Kind() != codec.KindList {
			return mismatch(v, dst)
		}
		s := reflect.MakeSlice(dst.Type(), v.Len(), v.Len())
		for i, item := range v.Items() {
			if err := fromValue(item, s.Index(i), depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		dst.Set(s)
		return nil
	case reflect.Array:
		if dst.Type().Elem().Kind() == reflect.Uint8 {
			b, ok := v.AsBytes()
			if !ok || len(b) != dst.Len() {
				return mismatch(v, dst)
			}
			reflect.Copy(dst, reflect.ValueOf(b))
			return nil
		}
		if v.Kind() != codec.KindList || v.Len() != dst.Len() {
			return mismatch(v, dst)
		}
		for i, item := range v.Items() {
			if err := fromValue(item, dst.Index(i), depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case reflect.Map:
		if v.Kind() != codec.KindMap || dst.Type().Key().Kind() != reflect.String {
			return mismatch(v, dst)
		}
		m := reflect.MakeMapWithSize(dst.Type(), v.Len())
		for _, e := range v.Entries() {
			ev := reflect.New(dst.Type().Elem()).Elem()
			if err := fromValue(e.Value, ev, depth+1); err != nil {
				return fmt.Errorf("%s: %w", e.Key, err)
			}
			m.SetMapIndex(reflect.ValueOf(e.Key).Convert(dst.Type().Key()), ev)
		}
		dst.Set(m)
		return nil
	case reflect.Struct:
		if v.Kind() != codec.KindMap {
			return mismatch(v, dst)
		}
		fields := fieldsOf(dst.Type())
		for _, e := range v.Entries() {
			for _, f := range fields {
				if f.name != e.Key {
					continue
				}
				if err := fromValue(e.Value, dst.FieldByIndex(f.index), depth+1); err != nil {
					return fmt.Errorf("%s: %w", f.name, err)
				}
				break
			}
		}
		return nil
	}
	return fmt.Errorf("convert: unsupported type %s", dst.Type())
}

// natural returns v as plain Go values.
func natural(v codec.Value) any {
	switch v.Kind() {
	case codec.KindBoolean:
		b, _ := v.AsBool()
		return b
	case codec.KindLong:
		i, _ := v.AsLong()
		return i
	case codec.KindDouble:
		f, _ := v.AsDouble()
		return f
	case codec.KindBytes:
		b, _ := v.AsBytes()
		return append([]byte(nil), b...)
	case codec.KindString:
		s, _ := v.AsString()
		return s
	case codec.KindList:
		out := make([]any, v.Len())
		for i, item := range v.Items() {
			out[i] = natural(item)
		}
		return out
	case codec.KindMap:
		out := make(map[string]any, v.Len())
		for _, e := range v.Entries() {
			out[e.Key] = natural(e.Value)
		}
		return out
	}
	return nil
}

func mismatch(v codec.Value, dst reflect.Value) error {
	return fmt.Errorf("convert: cannot store a %s value in %s", v.Kind(), dst.Type())
}

type field struct {
	name      string
	index     []int
	omitEmpty bool
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf lists the exported fields of struct type t with their names.
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var fields []field
	for _, sf := range reflect.VisibleFields(t) {
		if !sf.IsExported() || sf.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fields = append(fields, field{name: name, index: sf.Index, omitEmpty: strings.Contains(","+opts+",", ",omitempty,")})
	}
	fieldCache.Store(t, fields)
	return fields
}
