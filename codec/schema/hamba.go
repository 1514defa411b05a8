package schema

import (
	"fmt"
	"slices"

	"github.com/hamba/avro/v2"

	"github.com/weft-run/weft/codec"
)

// HambaValue is the Go mapping of the record durable_workflow.protocol.Value
// for hamba/avro. Value holds nil for null, or one of HambaBoolean,
// HambaLong, HambaDouble, HambaBytes, HambaString, HambaList and HambaMap
// (values, not pointers): the branch records, which a Hamba registers by
// their full names.
type HambaValue struct {
	Value any `avro:"value"`
}

// HambaBoolean is the branch record durable_workflow.protocol.BooleanValue.
type HambaBoolean struct {
	Boolean bool `avro:"boolean"`
}

// HambaLong is the branch record durable_workflow.protocol.LongValue.
type HambaLong struct {
	Long int64 `avro:"long"`
}

// HambaDouble is the branch record durable_workflow.protocol.DoubleValue.
type HambaDouble struct {
	Double float64 `avro:"double"`
}

// HambaBytes is the branch record durable_workflow.protocol.BytesValue.
type HambaBytes struct {
	Bytes []byte `avro:"bytes"`
}

// HambaString is the branch record durable_workflow.protocol.StringValue.
type HambaString struct {
	String string `avro:"string"`
}

// HambaList is the branch record durable_workflow.protocol.ArrayValue.
type HambaList struct {
	Items []HambaValue `avro:"items"`
}

// HambaMap is the branch record durable_workflow.protocol.MapValue. A Go map
// has no order: hamba writes its entries in random order (guest-toolchains
// experiment 4), so its bytes are not deterministic for maps of two or more
// entries.
type HambaMap struct {
	Entries map[string]HambaValue `avro:"entries"`
}

// HambaConfig configures a Hamba. The zero value is the configuration whose
// bytes equal codec.AppendDatum's for the same map order.
type HambaConfig struct {
	// BlockSizeHeader makes hamba write each non-empty list and map block as
	// a negative count followed by the block's byte size: hamba's own
	// default, and valid Avro, but every SDK writes a plain count instead
	// (reference §1.1). Defaults to false.
	BlockSizeHeader bool
}

// Hamba reads and writes schema v1 datums through hamba/avro's generic
// reflection API, on a frozen avro.Config of its own that registers the
// branch records by full name. The project uses it as the differential
// oracle of the codec and as the comparison point of its benchmark.
//
// A Hamba is safe for concurrent use.
type Hamba struct {
	api avro.API
}

// NewHamba returns a Hamba configured by cfg.
func NewHamba(cfg HambaConfig) *Hamba {
	api := avro.Config{
		DisableBlockSizeHeader: !cfg.BlockSizeHeader,
		// Match the codec's size limit instead of hamba's 1 MiB default.
		MaxByteSliceSize: codec.DefaultLimits.MaxSize,
	}.Freeze()
	api.Register(kindBranches[codec.KindBoolean], HambaBoolean{})
	api.Register(kindBranches[codec.KindLong], HambaLong{})
	api.Register(kindBranches[codec.KindDouble], HambaDouble{})
	api.Register(kindBranches[codec.KindBytes], HambaBytes{})
	api.Register(kindBranches[codec.KindString], HambaString{})
	api.Register(kindBranches[codec.KindList], HambaList{})
	api.Register(kindBranches[codec.KindMap], HambaMap{})
	return &Hamba{api: api}
}

// API returns the frozen hamba configuration, for use with V1().Avro().
// hamba has no nesting limit and a deep enough datum overflows the goroutine
// stack, which no recover catches (guest-toolchains experiment 4): bytes
// from an untrusted source must pass codec.ValidateFrame before they reach
// API().Unmarshal. Unmarshal does that.
func (h *Hamba) API() avro.API { return h.api }

// Marshal returns the schema v1 datum of hv as hamba writes it.
func (h *Hamba) Marshal(hv HambaValue) ([]byte, error) {
	b, err := h.api.Marshal(v1.avro, hv)
	if err != nil {
		return nil, fmt.Errorf("hamba marshal: %w", err)
	}
	return b, nil
}

// Unmarshal decodes a schema v1 datum with hamba. It first checks the datum
// with codec.ValidateFrame under codec.DefaultLimits, so a malformed, too
// deep or too large datum fails with that codec error and never reaches
// hamba.
func (h *Hamba) Unmarshal(datum []byte) (HambaValue, error) {
	frame := make([]byte, 0, codec.HeaderSize+len(datum))
	frame = append(frame, codec.Magic[:]...)
	frame = append(frame, codec.Fingerprint[:]...)
	frame = append(frame, datum...)
	if err := codec.ValidateFrame(frame, codec.DefaultLimits); err != nil {
		return HambaValue{}, err
	}
	var hv HambaValue
	if err := h.api.Unmarshal(v1.avro, datum, &hv); err != nil {
		return HambaValue{}, fmt.Errorf("hamba unmarshal: %w", err)
	}
	return hv, nil
}

// FromValue converts v to its hamba mapping. Bytes, lists and maps share
// their storage with v. It fails with codec.CodeInvalidMapKey for a map with
// a duplicate key, which a Go map cannot hold, and codec.CodePayloadLimit
// for a value nested deeper than codec.DefaultLimits.MaxDepth.
func FromValue(v codec.Value) (HambaValue, error) {
	return fromValue(v, 0)
}

func fromValue(v codec.Value, level int) (HambaValue, error) {
	switch v.Kind() {
	case codec.KindNull:
		return HambaValue{}, nil
	case codec.KindBoolean:
		b, _ := v.AsBool()
		return HambaValue{Value: HambaBoolean{Boolean: b}}, nil
	case codec.KindLong:
		i, _ := v.AsLong()
		return HambaValue{Value: HambaLong{Long: i}}, nil
	case codec.KindDouble:
		f, _ := v.AsDouble()
		return HambaValue{Value: HambaDouble{Double: f}}, nil
	case codec.KindBytes:
		b, _ := v.AsBytes()
		return HambaValue{Value: HambaBytes{Bytes: b}}, nil
	case codec.KindString:
		s, _ := v.AsString()
		return HambaValue{Value: HambaString{String: s}}, nil
	}
	if level >= codec.DefaultLimits.MaxDepth {
		return HambaValue{}, limitError()
	}
	if v.Kind() == codec.KindList {
		items := make([]HambaValue, len(v.Items()))
		for i, item := range v.Items() {
			hv, err := fromValue(item, level+1)
			if err != nil {
				return HambaValue{}, err
			}
			items[i] = hv
		}
		return HambaValue{Value: HambaList{Items: items}}, nil
	}
	entries := make(map[string]HambaValue, len(v.Entries()))
	for _, e := range v.Entries() {
		if _, dup := entries[e.Key]; dup {
			return HambaValue{}, &codec.Error{Code: codec.CodeInvalidMapKey, Message: fmt.Sprintf("duplicate map key %q has no hamba mapping", e.Key)}
		}
		hv, err := fromValue(e.Value, level+1)
		if err != nil {
			return HambaValue{}, err
		}
		entries[e.Key] = hv
	}
	return HambaValue{Value: HambaMap{Entries: entries}}, nil
}

// ToValue converts a hamba mapping to a Value. Map entries come out sorted
// by key, since a Go map has no order. It fails for a branch value of a type
// other than the Hamba* branch records and codec.CodePayloadLimit for a
// value nested deeper than codec.DefaultLimits.MaxDepth.
func ToValue(hv HambaValue) (codec.Value, error) {
	return toValue(hv, 0)
}

func toValue(hv HambaValue, level int) (codec.Value, error) {
	switch b := hv.Value.(type) {
	case nil:
		return codec.Null(), nil
	case HambaBoolean:
		return codec.Bool(b.Boolean), nil
	case HambaLong:
		return codec.Long(b.Long), nil
	case HambaDouble:
		return codec.Double(b.Double), nil
	case HambaBytes:
		return codec.Bytes(b.Bytes), nil
	case HambaString:
		return codec.String(b.String), nil
	case HambaList:
		if level >= codec.DefaultLimits.MaxDepth {
			return codec.Value{}, limitError()
		}
		items := make([]codec.Value, len(b.Items))
		for i, item := range b.Items {
			v, err := toValue(item, level+1)
			if err != nil {
				return codec.Value{}, err
			}
			items[i] = v
		}
		return codec.List(items...), nil
	case HambaMap:
		if level >= codec.DefaultLimits.MaxDepth {
			return codec.Value{}, limitError()
		}
		keys := make([]string, 0, len(b.Entries))
		for k := range b.Entries {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		entries := make([]codec.Entry, len(keys))
		for i, k := range keys {
			v, err := toValue(b.Entries[k], level+1)
			if err != nil {
				return codec.Value{}, err
			}
			entries[i] = codec.Entry{Key: k, Value: v}
		}
		return codec.Map(entries...), nil
	default:
		return codec.Value{}, fmt.Errorf("hamba value: branch type %T is not a Value branch record", hv.Value)
	}
}

// limitError returns the payload_limit_exceeded error of a too deep value.
func limitError() error {
	return &codec.Error{
		Code:    codec.CodePayloadLimit,
		Message: fmt.Sprintf("value nested deeper than %d levels", codec.DefaultLimits.MaxDepth),
	}
}
