package valuebench

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/codec/schema"
)

// BytesSentinel is the only key of the JSON object that stands for an Avro
// bytes value in the corpus: {"$avro_bytes":"<standard base64>"}. Only the
// typed paths turn it into bytes; the JSON baselines keep it as a one-entry
// object (reference §2.4). It is a benchmark convention, not a runtime one.
const BytesSentinel = "$avro_bytes"

// strictBase64 is standard base64 that accepts one spelling per byte string.
var strictBase64 = base64.StdEncoding.Strict()

// ToValue adapts a native value (see Object) to a codec.Value: int64 to
// long, Float to double, the bytes sentinel object to bytes, Object to a map
// in member order. Other Go types fail with an error. All list items and
// all map entries of the result share one allocation each.
func ToValue(native any) (codec.Value, error) {
	items, entries, err := countNative(native, 0)
	if err != nil {
		return codec.Value{}, err
	}
	a := valueArena{items: make([]codec.Value, items), entries: make([]codec.Entry, entries)}
	return a.value(native)
}

// countNative returns how many list items and map entries native holds,
// checking its nesting against the codec's limit and its types.
func countNative(native any, level int) (items, entries int, err error) {
	switch x := native.(type) {
	case nil, bool, int64, Float, string:
		return 0, 0, nil
	case []any:
		if level >= codec.DefaultLimits.MaxDepth {
			return 0, 0, depthError()
		}
		items = len(x)
		for _, item := range x {
			i, e, err := countNative(item, level+1)
			if err != nil {
				return 0, 0, err
			}
			items, entries = items+i, entries+e
		}
		return items, entries, nil
	case Object:
		if isSentinel(x) {
			return 0, 0, nil
		}
		if level >= codec.DefaultLimits.MaxDepth {
			return 0, 0, depthError()
		}
		entries = len(x)
		for _, m := range x {
			i, e, err := countNative(m.Value, level+1)
			if err != nil {
				return 0, 0, err
			}
			items, entries = items+i, entries+e
		}
		return items, entries, nil
	default:
		return 0, 0, fmt.Errorf("unsupported_value_type: %T has no Avro Value adapter", native)
	}
}

// valueArena hands out the list items and map entries of one adapted value
// from two slices sized by countNative.
type valueArena struct {
	items   []codec.Value
	entries []codec.Entry
}

// value adapts native, which countNative has checked.
func (a *valueArena) value(native any) (codec.Value, error) {
	switch x := native.(type) {
	case nil:
		return codec.Null(), nil
	case bool:
		return codec.Bool(x), nil
	case int64:
		return codec.Long(x), nil
	case Float:
		return codec.Double(float64(x)), nil
	case string:
		return codec.String(x), nil
	case []any:
		items := a.items[:len(x):len(x)]
		a.items = a.items[len(x):]
		for i, item := range x {
			v, err := a.value(item)
			if err != nil {
				return codec.Value{}, err
			}
			items[i] = v
		}
		return codec.List(items...), nil
	default:
		o := x.(Object)
		if b, ok, err := sentinelBytes(o); ok || err != nil {
			return codec.Bytes(b), err
		}
		entries := a.entries[:len(o):len(o)]
		a.entries = a.entries[len(o):]
		for i, m := range o {
			v, err := a.value(m.Value)
			if err != nil {
				return codec.Value{}, err
			}
			entries[i] = codec.Entry{Key: m.Key, Value: v}
		}
		return codec.Map(entries...), nil
	}
}

// FromValue adapts a codec.Value back to its native form, the inverse of
// ToValue: bytes become the sentinel object. All list items of the result
// share one allocation, and so do all object members.
func FromValue(v codec.Value) any {
	items, members := countValue(v)
	a := nativeArena{items: make([]any, items), members: make(Object, members)}
	return a.native(v)
}

// countValue returns how many list items and object members the native
// form of v holds, counting one member per bytes sentinel.
func countValue(v codec.Value) (items, members int) {
	switch v.Kind() {
	case codec.KindBytes:
		return 0, 1
	case codec.KindList:
		items = v.Len()
		for _, item := range v.Items() {
			i, m := countValue(item)
			items, members = items+i, members+m
		}
	case codec.KindMap:
		members = v.Len()
		for _, e := range v.Entries() {
			i, m := countValue(e.Value)
			items, members = items+i, members+m
		}
	}
	return items, members
}

// nativeArena hands out the list items and object members of one adapted
// value from two slices sized by countValue.
type nativeArena struct {
	items   []any
	members Object
}

// object takes an Object of n members from the arena.
func (a *nativeArena) object(n int) Object {
	o := a.members[:n:n]
	a.members = a.members[n:]
	return o
}

// native adapts v.
func (a *nativeArena) native(v codec.Value) any {
	switch v.Kind() {
	case codec.KindNull:
		return nil
	case codec.KindBoolean:
		b, _ := v.AsBool()
		return b
	case codec.KindLong:
		i, _ := v.AsLong()
		return i
	case codec.KindDouble:
		f, _ := v.AsDouble()
		return Float(f)
	case codec.KindBytes:
		b, _ := v.AsBytes()
		o := a.object(1)
		o[0] = Member{Key: BytesSentinel, Value: sentinelText(b)}
		return o
	case codec.KindString:
		s, _ := v.AsString()
		return s
	case codec.KindList:
		n := v.Len()
		items := a.items[:n:n]
		a.items = a.items[n:]
		for i, item := range v.Items() {
			items[i] = a.native(item)
		}
		return items
	default:
		entries := v.Entries()
		obj := a.object(len(entries))
		for i, e := range entries {
			obj[i] = Member{Key: e.Key, Value: a.native(e.Value)}
		}
		return obj
	}
}

// ToHamba adapts a native value to hamba/avro's mapping of the Value schema,
// the way ToValue adapts it to the codec's. A Go map cannot hold a
// duplicate key: the last member wins.
func ToHamba(native any) (schema.HambaValue, error) {
	return toHamba(native, 0)
}

func toHamba(native any, level int) (schema.HambaValue, error) {
	switch x := native.(type) {
	case nil:
		return schema.HambaValue{}, nil
	case bool:
		return schema.HambaValue{Value: schema.HambaBoolean{Boolean: x}}, nil
	case int64:
		return schema.HambaValue{Value: schema.HambaLong{Long: x}}, nil
	case Float:
		return schema.HambaValue{Value: schema.HambaDouble{Double: float64(x)}}, nil
	case string:
		return schema.HambaValue{Value: schema.HambaString{String: x}}, nil
	case []any:
		if level >= codec.DefaultLimits.MaxDepth {
			return schema.HambaValue{}, depthError()
		}
		items := make([]schema.HambaValue, len(x))
		for i, item := range x {
			hv, err := toHamba(item, level+1)
			if err != nil {
				return schema.HambaValue{}, err
			}
			items[i] = hv
		}
		return schema.HambaValue{Value: schema.HambaList{Items: items}}, nil
	case Object:
		if b, ok, err := sentinelBytes(x); ok || err != nil {
			return schema.HambaValue{Value: schema.HambaBytes{Bytes: b}}, err
		}
		if level >= codec.DefaultLimits.MaxDepth {
			return schema.HambaValue{}, depthError()
		}
		entries := make(map[string]schema.HambaValue, len(x))
		for _, m := range x {
			hv, err := toHamba(m.Value, level+1)
			if err != nil {
				return schema.HambaValue{}, err
			}
			entries[m.Key] = hv
		}
		return schema.HambaValue{Value: schema.HambaMap{Entries: entries}}, nil
	default:
		return schema.HambaValue{}, fmt.Errorf("unsupported_value_type: %T has no Avro Value adapter", native)
	}
}

// FromHamba adapts hamba/avro's mapping back to a native value. Map members
// come out in Go's map iteration order, which is random.
func FromHamba(hv schema.HambaValue) (any, error) {
	switch b := hv.Value.(type) {
	case nil:
		return nil, nil
	case schema.HambaBoolean:
		return b.Boolean, nil
	case schema.HambaLong:
		return b.Long, nil
	case schema.HambaDouble:
		return Float(b.Double), nil
	case schema.HambaBytes:
		return Object{{Key: BytesSentinel, Value: sentinelText(b.Bytes)}}, nil
	case schema.HambaString:
		return b.String, nil
	case schema.HambaList:
		items := make([]any, len(b.Items))
		for i, item := range b.Items {
			x, err := FromHamba(item)
			if err != nil {
				return nil, err
			}
			items[i] = x
		}
		return items, nil
	case schema.HambaMap:
		obj := make(Object, 0, len(b.Entries))
		for k, item := range b.Entries {
			x, err := FromHamba(item)
			if err != nil {
				return nil, err
			}
			obj = append(obj, Member{Key: k, Value: x})
		}
		return obj, nil
	default:
		return nil, fmt.Errorf("hamba value: branch type %T is not a Value branch record", hv.Value)
	}
}

// sentinelText returns the standard base64 of b, the text of its bytes
// sentinel, with one allocation for a short b. Every decode adapter uses it.
func sentinelText(b []byte) string {
	var buf [64]byte
	return string(base64.StdEncoding.AppendEncode(buf[:0], b))
}

// isSentinel reports whether o is the bytes sentinel: one member, named
// BytesSentinel, holding a string.
func isSentinel(o Object) bool {
	if len(o) != 1 || o[0].Key != BytesSentinel {
		return false
	}
	_, ok := o[0].Value.(string)
	return ok
}

// sentinelBytes reports whether o is the bytes sentinel and, if so, returns
// its bytes; a sentinel whose text is not strict base64 fails.
func sentinelBytes(o Object) ([]byte, bool, error) {
	if !isSentinel(o) {
		return nil, false, nil
	}
	b, err := strictBase64.DecodeString(o[0].Value.(string))
	if err != nil {
		return nil, true, fmt.Errorf("bytes sentinel: %w", err)
	}
	return b, true, nil
}

// depthError is the error for a native value nested deeper than the codec
// allows.
func depthError() error {
	return &codec.Error{
		Code:    codec.CodePayloadLimit,
		Message: fmt.Sprintf("value nested deeper than %d levels", codec.DefaultLimits.MaxDepth),
	}
}

// sortedNative returns a copy of native with every object's members sorted
// by key, for comparing values whose map order was lost.
func sortedNative(native any) any {
	switch x := native.(type) {
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = sortedNative(item)
		}
		return out
	case Object:
		out := make(Object, len(x))
		for i, m := range x {
			out[i] = Member{Key: m.Key, Value: sortedNative(m.Value)}
		}
		slices.SortStableFunc(out, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
		return out
	default:
		return native
	}
}
