package valuebench

import (
	"fmt"
	"sync"

	"github.com/weft-run/weft/codec"
)

// streamer adapts native values to a codec.Encoder. It keeps the encoder's
// buffer and a scratch slice for decoded bytes sentinels between uses.
type streamer struct {
	enc     codec.Encoder
	scratch []byte
}

// streamers pools streamers, so that encoding does not allocate beyond
// its result once the pool is warm.
var streamers = sync.Pool{New: func() any { return new(streamer) }}

// AppendEnvelope appends the avro envelope JSON of a native value (see
// Object) to dst and returns the extended slice. The adapter walks native
// and streams it into a pooled codec.Encoder, which writes the datum, the
// frame and the envelope directly, with no codec.Value in between. The
// bytes are those of ToValue followed by codec.AppendEnvelopeJSON, and it
// fails where they fail: an unsupported Go type, a bytes sentinel that is
// not strict base64, nesting beyond the codec's limit
// (payload_limit_exceeded), a non-finite Float (non_finite_float) or text
// that is not UTF-8. On error dst is returned unchanged.
func AppendEnvelope(dst []byte, native any) ([]byte, error) {
	s := streamers.Get().(*streamer)
	defer streamers.Put(s)
	s.enc.Reset()
	if err := s.write(native); err != nil {
		return dst, err
	}
	return s.enc.AppendEnvelopeJSON(dst)
}

// write streams native into the encoder. Scalars are checked by the
// encoder, whose error AppendEnvelopeJSON returns; write itself stops at an
// unsupported Go type, a bad bytes sentinel, or a container the encoder
// refused (too deep), so a hostile nesting ends at the depth limit.
func (s *streamer) write(native any) error {
	e := &s.enc
	switch x := native.(type) {
	case nil:
		e.Null()
	case bool:
		e.Bool(x)
	case int64:
		e.Long(x)
	case Float:
		e.Double(float64(x))
	case string:
		e.String(x)
	case []any:
		if e.BeginList(len(x)); e.Err() != nil {
			return e.Err()
		}
		for _, item := range x {
			if err := s.write(item); err != nil {
				return err
			}
		}
		e.End()
	case Object:
		if isSentinel(x) {
			b, err := strictBase64.AppendDecode(s.scratch[:0], []byte(x[0].Value.(string)))
			if err != nil {
				return fmt.Errorf("bytes sentinel: %w", err)
			}
			s.scratch = b
			e.Bytes(b)
			return nil
		}
		if e.BeginMap(len(x)); e.Err() != nil {
			return e.Err()
		}
		for _, m := range x {
			e.Key(m.Key)
			if err := s.write(m.Value); err != nil {
				return err
			}
		}
		e.End()
	default:
		return fmt.Errorf("unsupported_value_type: %T has no Avro Value adapter", native)
	}
	return nil
}

// decoders pools the pull decoders of DecodeEnvelope.
var decoders = sync.Pool{New: func() any { return new(codec.Decoder) }}

// DecodeEnvelope reads avro envelope JSON into a native value (see Object),
// the inverse of AppendEnvelope: a pooled codec.Decoder checks the whole
// envelope as codec.DecodeEnvelopeJSON does, then the adapter pulls the
// datum's values straight into native ones, with no codec.Value in between.
// The result equals FromValue of the decoded Value; its strings share the
// decoder's one buffer for string contents, its list items share one
// allocation, and so do its object members.
func DecodeEnvelope(data []byte) (any, error) {
	d := decoders.Get().(*codec.Decoder)
	defer decoders.Put(d)
	if err := d.ResetEnvelopeJSON(data); err != nil {
		return nil, err
	}
	items, entries := d.Counts()
	a := nativeArena{items: make([]any, items), members: make(Object, entries)}
	native := a.read(d)
	if err := d.Finish(); err != nil {
		return nil, err
	}
	return native, nil
}

// read pulls the next value from d. A list or map takes its first block's
// length from the arena; further blocks grow it outside the arena.
func (a *nativeArena) read(d *codec.Decoder) any {
	switch d.Next() {
	case codec.KindNull:
		return nil
	case codec.KindBoolean:
		return d.Bool()
	case codec.KindLong:
		return d.Long()
	case codec.KindDouble:
		return Float(d.Double())
	case codec.KindBytes:
		return Object{{Key: BytesSentinel, Value: sentinelText(d.Bytes())}}
	case codec.KindString:
		return d.String()
	case codec.KindList:
		n := min(d.Len(), len(a.items))
		items := a.items[:n:n]
		a.items = a.items[n:]
		i := 0
		for ; d.More(); i++ {
			if i < len(items) {
				items[i] = a.read(d)
			} else {
				items = append(items, a.read(d))
			}
		}
		return items[:i]
	default:
		n := min(d.Len(), len(a.members))
		obj := a.members[:n:n]
		a.members = a.members[n:]
		i := 0
		for ; d.More(); i++ {
			m := Member{Key: d.Key()}
			m.Value = a.read(d)
			if i < len(obj) {
				obj[i] = m
			} else {
				obj = append(obj, m)
			}
		}
		return obj[:i]
	}
}
