package codec

import (
	"math"
	"unsafe"
)

// Kind names one of the eight branches of the Value union, in wire order
// (Avro Value protocol: wire format). The numeric value of a Kind is its
// union index on the wire.
type Kind uint8

// The eight kinds of schema v1, in union order. Published branches never
// change order.
const (
	KindNull Kind = iota
	KindBoolean
	KindLong
	KindDouble
	KindBytes
	KindString
	KindList
	KindMap
)

var kindNames = [...]string{"null", "boolean", "long", "double", "bytes", "string", "list", "map"}

// String returns the kind's lowercase name ("null", "boolean", "long", …).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Value is one durable value of the fixed schema durable_workflow.protocol.Value:
// null, boolean, long, double, bytes, string, list or map. Maps keep their
// insertion (wire) order, so a decoded value re-encodes to the same bytes.
//
// The zero Value is null. Values are immutable by convention: the slices a
// Value returns must not be modified. A Value is safe for concurrent reads.
type Value struct {
	kind Kind
	num  uint64         // boolean, long or double bits; length of a string, bytes, list or map
	ptr  unsafe.Pointer // data of a string, bytes, list or map
}

var (
	zeroByte  byte
	zeroValue Value
	zeroEntry Entry
)

func (v Value) strv() string {
	if v.kind != KindString {
		return ""
	}
	return unsafe.String((*byte)(v.ptr), int(v.num))
}

func (v Value) bytesv() []byte {
	if v.kind != KindBytes {
		return nil
	}
	return unsafe.Slice((*byte)(v.ptr), int(v.num))
}

func (v Value) itemsv() []Value {
	if v.kind != KindList {
		return nil
	}
	return unsafe.Slice((*Value)(v.ptr), int(v.num))
}

func (v Value) entriesv() []Entry {
	if v.kind != KindMap {
		return nil
	}
	return unsafe.Slice((*Entry)(v.ptr), int(v.num))
}

// Entry is one key and value of a map Value.
type Entry struct {
	Key   string
	Value Value
}

// Null returns the null Value (the zero Value).
func Null() Value { return Value{} }

// Bool returns a boolean Value.
func Bool(b bool) Value {
	v := Value{kind: KindBoolean}
	if b {
		v.num = 1
	}
	return v
}

// Long returns a long (signed 64-bit integer) Value.
func Long(i int64) Value { return Value{kind: KindLong, num: uint64(i)} }

// Double returns a double Value. A non-finite f is accepted here and rejected
// with non_finite_float when the value is encoded.
func Double(f float64) Value { return Value{kind: KindDouble, num: math.Float64bits(f)} }

// Bytes returns a bytes Value holding b. The Value does not copy b.
func Bytes(b []byte) Value {
	if len(b) == 0 {
		return Value{kind: KindBytes, ptr: unsafe.Pointer(&zeroByte)}
	}
	return Value{kind: KindBytes, num: uint64(len(b)), ptr: unsafe.Pointer(unsafe.SliceData(b))}
}

// String returns a string Value. Invalid UTF-8 is accepted here and rejected
// with invalid_payload_framing when the value is encoded.
func String(s string) Value {
	return Value{kind: KindString, num: uint64(len(s)), ptr: unsafe.Pointer(unsafe.StringData(s))}
}

// List returns a list Value of items. The Value does not copy items.
func List(items ...Value) Value {
	if len(items) == 0 {
		return Value{kind: KindList, ptr: unsafe.Pointer(&zeroValue)}
	}
	return Value{kind: KindList, num: uint64(len(items)), ptr: unsafe.Pointer(unsafe.SliceData(items))}
}

// Map returns a map Value whose entries keep the given order. The Value does
// not copy entries. Duplicate keys are kept as given.
func Map(entries ...Entry) Value {
	if len(entries) == 0 {
		return Value{kind: KindMap, ptr: unsafe.Pointer(&zeroEntry)}
	}
	return Value{kind: KindMap, num: uint64(len(entries)), ptr: unsafe.Pointer(unsafe.SliceData(entries))}
}

// Kind reports which branch of the union v holds.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// AsBool returns the boolean and whether v is a boolean.
func (v Value) AsBool() (bool, bool) { return v.num == 1, v.kind == KindBoolean }

// AsLong returns the long and whether v is a long.
func (v Value) AsLong() (int64, bool) { return int64(v.num), v.kind == KindLong }

// AsDouble returns the double and whether v is a double.
func (v Value) AsDouble() (float64, bool) { return math.Float64frombits(v.num), v.kind == KindDouble }

// AsBytes returns the bytes and whether v is bytes. The slice must not be modified.
func (v Value) AsBytes() ([]byte, bool) { return v.bytesv(), v.kind == KindBytes }

// AsString returns the string and whether v is a string.
func (v Value) AsString() (string, bool) { return v.strv(), v.kind == KindString }

// Items returns the items of a list, or nil if v is not a list. The slice
// must not be modified.
func (v Value) Items() []Value { return v.itemsv() }

// Entries returns the entries of a map in their order, or nil if v is not a
// map. The slice must not be modified.
func (v Value) Entries() []Entry { return v.entriesv() }

// Len returns the number of items of a list or entries of a map, the length
// of bytes or a string, and 0 otherwise.
func (v Value) Len() int {
	switch v.kind {
	case KindList, KindMap, KindBytes, KindString:
		return int(v.num)
	}
	return 0
}

// Get returns the value of the first entry with key in a map, and whether
// there was one. It returns false if v is not a map.
func (v Value) Get(key string) (Value, bool) {
	entries := v.entriesv()
	for i := range entries {
		if entries[i].Key == key {
			return entries[i].Value, true
		}
	}
	return Value{}, false
}

// Index returns item i of a list and whether it exists.
func (v Value) Index(i int) (Value, bool) {
	items := v.itemsv()
	if i < 0 || i >= len(items) {
		return Value{}, false
	}
	return items[i], true
}

// Equal reports whether a and b are the same value: the same kind, doubles
// with the same bits (so -0.0 differs from 0.0), bytes and strings with the
// same contents, lists item by item, and maps entry by entry in order.
func Equal(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case KindNull:
		return true
	case KindBoolean, KindLong, KindDouble:
		return a.num == b.num
	case KindBytes:
		return string(a.bytesv()) == string(b.bytesv())
	case KindString:
		return a.strv() == b.strv()
	case KindList:
		if len(a.itemsv()) != len(b.itemsv()) {
			return false
		}
		for i := range a.itemsv() {
			if !Equal(a.itemsv()[i], b.itemsv()[i]) {
				return false
			}
		}
		return true
	case KindMap:
		if len(a.entriesv()) != len(b.entriesv()) {
			return false
		}
		for i := range a.entriesv() {
			if a.entriesv()[i].Key != b.entriesv()[i].Key || !Equal(a.entriesv()[i].Value, b.entriesv()[i].Value) {
				return false
			}
		}
		return true
	}
	return false
}
