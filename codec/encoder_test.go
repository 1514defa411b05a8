package codec_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
)

// requireStreamMatches streams v through e and checks every output of the
// Encoder against the Value API.
func requireStreamMatches(tb testing.TB, e *codec.Encoder, v codec.Value) {
	tb.Helper()
	e.Reset()
	streamValue(e, v)
	require.NoError(tb, e.Err())

	want, err := codec.AppendDatum(nil, v)
	require.NoError(tb, err)
	datum, err := e.Datum()
	require.NoError(tb, err)
	require.Equal(tb, want, datum, "streamed datum")

	wantFrame, err := codec.EncodeFrame(v)
	require.NoError(tb, err)
	frame, err := e.Frame()
	require.NoError(tb, err)
	require.Equal(tb, wantFrame, frame, "streamed frame")

	env, err := codec.EncodeEnvelope(v)
	require.NoError(tb, err)
	wantJSON, err := env.MarshalJSON()
	require.NoError(tb, err)
	gotJSON, err := e.AppendEnvelopeJSON([]byte("prefix:"))
	require.NoError(tb, err)
	require.Equal(tb, "prefix:"+string(wantJSON), string(gotJSON), "streamed envelope JSON")

	// The same value written whole with Encoder.Value.
	e.Reset()
	e.Value(v)
	whole, err := e.Datum()
	require.NoError(tb, err)
	require.Equal(tb, want, whole, "Encoder.Value datum")
}

func TestEncoderMatchesAppendDatum(t *testing.T) {
	var e codec.Encoder
	t.Run("golden", func(t *testing.T) {
		for name, v := range goldenValues {
			t.Run(name, func(t *testing.T) { requireStreamMatches(t, &e, v) })
		}
	})
	t.Run("benchmark corpus", func(t *testing.T) { requireStreamMatches(t, &e, benchValue(t)) })
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 11))
		for range 2000 {
			requireStreamMatches(t, &e, randomValue(r, 4))
		}
	})
	t.Run("deepest", func(t *testing.T) { requireStreamMatches(t, &e, nest(codec.DefaultLimits.MaxDepth)) })
	t.Run("large", func(t *testing.T) {
		requireStreamMatches(t, &e, codec.List(codec.Bytes(make([]byte, 100_000)), codec.String("é")))
	})
	t.Run("value inside a stream", func(t *testing.T) {
		inner := codec.Map(kv("a", codec.List(codec.Long(1), codec.Double(2.5))), kv("b", codec.Null()))
		e.Reset()
		e.BeginList(2)
		e.Value(inner)
		e.String("tail")
		e.End()
		datum, err := e.Datum()
		require.NoError(t, err)
		want, err := codec.AppendDatum(nil, codec.List(inner, codec.String("tail")))
		require.NoError(t, err)
		require.Equal(t, want, datum)
	})
}

func TestEncoderRejects(t *testing.T) {
	badUTF8 := string([]byte{0xff, 'a'})
	tests := []struct {
		name  string
		write func(e *codec.Encoder)
		code  codec.Code
	}{
		{name: "NaN", write: func(e *codec.Encoder) { e.Double(math.NaN()) }, code: codec.CodeNonFiniteFloat},
		{name: "infinity in a list", write: func(e *codec.Encoder) {
			e.BeginList(1)
			e.Double(math.Inf(-1))
			e.End()
		}, code: codec.CodeNonFiniteFloat},
		{name: "string not UTF-8", write: func(e *codec.Encoder) { e.String(badUTF8) }, code: codec.CodeInvalidPayloadFraming},
		{name: "key not UTF-8", write: func(e *codec.Encoder) {
			e.BeginMap(1)
			e.Key(badUTF8)
			e.Null()
			e.End()
		}, code: codec.CodeInvalidMapKey},
		{name: "too deep", write: func(e *codec.Encoder) {
			for range codec.DefaultLimits.MaxDepth + 1 {
				e.BeginList(1)
			}
		}, code: codec.CodePayloadLimit},
		{name: "value too deep for its place", write: func(e *codec.Encoder) {
			e.BeginList(1)
			e.Value(nest(codec.DefaultLimits.MaxDepth))
			e.End()
		}, code: codec.CodePayloadLimit},
		{name: "value with NaN", write: func(e *codec.Encoder) { e.Value(codec.List(codec.Double(math.NaN()))) }, code: codec.CodeNonFiniteFloat},
		{name: "negative count", write: func(e *codec.Encoder) { e.BeginList(-1) }, code: codec.CodeInvalidPayloadFraming},
		{name: "list with fewer items", write: func(e *codec.Encoder) {
			e.BeginList(2)
			e.Null()
			e.End()
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "list with more items", write: func(e *codec.Encoder) {
			e.BeginList(1)
			e.Null()
			e.Null()
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "map with fewer entries", write: func(e *codec.Encoder) {
			e.BeginMap(2)
			e.Key("a")
			e.Null()
			e.End()
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "map with more entries", write: func(e *codec.Encoder) {
			e.BeginMap(0)
			e.Key("a")
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "map value without key", write: func(e *codec.Encoder) {
			e.BeginMap(1)
			e.Null()
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "map closed after a key", write: func(e *codec.Encoder) {
			e.BeginMap(1)
			e.Key("a")
			e.End()
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "two keys", write: func(e *codec.Encoder) {
			e.BeginMap(2)
			e.Key("a")
			e.Key("b")
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "key in a list", write: func(e *codec.Encoder) {
			e.BeginList(1)
			e.Key("a")
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "key at the top", write: func(e *codec.Encoder) { e.Key("a") }, code: codec.CodeInvalidPayloadFraming},
		{name: "end without begin", write: func(e *codec.Encoder) { e.End() }, code: codec.CodeInvalidPayloadFraming},
		{name: "end after the value", write: func(e *codec.Encoder) {
			e.BeginList(0)
			e.End()
			e.End()
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "two top-level values", write: func(e *codec.Encoder) {
			e.Long(1)
			e.Long(2)
		}, code: codec.CodeInvalidPayloadFraming},
		{name: "no value", write: func(*codec.Encoder) {}, code: codec.CodeInvalidPayloadFraming},
		{name: "list left open", write: func(e *codec.Encoder) {
			e.BeginList(1)
			e.Null()
		}, code: codec.CodeInvalidPayloadFraming},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e codec.Encoder
			e.Long(99) // a previous value, dropped by Reset
			e.Reset()
			tt.write(&e)
			_, err := e.Datum()
			require.ErrorIs(t, err, tt.code)
			require.Equal(t, tt.code, codec.ErrorCode(err))
			_, ferr := e.Frame()
			require.Equal(t, err, ferr)
			dst := []byte("keep")
			out, jerr := e.AppendEnvelopeJSON(dst)
			require.Equal(t, err, jerr)
			require.Equal(t, "keep", string(out), "dst unchanged on error")

			// Errors are sticky: later calls change nothing.
			before := e.Err()
			e.Null()
			e.End()
			e.Key("x")
			if before != nil {
				require.Same(t, before, e.Err())
			}

			// Reset clears the error.
			e.Reset()
			e.String("ok")
			datum, err := e.Datum()
			require.NoError(t, err)
			require.Equal(t, []byte{0x0a, 0x04, 'o', 'k'}, datum)
		})
	}
}

func TestEncoderDoesNotAllocate(t *testing.T) {
	v := benchValue(t)
	var e codec.Encoder
	buf := make([]byte, 0, 512)
	run := func() {
		e.Reset()
		streamValue(&e, v)
		var err error
		if buf, err = e.AppendEnvelopeJSON(buf[:0]); err != nil {
			panic(err)
		}
	}
	run()
	require.Zero(t, testing.AllocsPerRun(100, run))
}

// FuzzEncoder drives an Encoder with a program of calls read from the input,
// most of them well ordered and some not, and checks it against a model:
// the Encoder accepts exactly the calls the model accepts, every failure
// carries a code, and whatever it writes is the datum AppendDatum writes for
// the value the model built, and decodes to it.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte{0x00})
	f.Add([]byte{6, 3, 0, 2, 5, 1, 'a', 8})
	f.Add([]byte{7, 2, 9, 1, 'k', 2, 40, 9, 0, 'j', 5, 0, 8})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	f.Add([]byte{5, 2, 0xc3, 0x28})
	f.Add([]byte{6, 1, 6, 1, 6, 1, 0, 8, 8, 8})
	f.Add([]byte{7, 1, 8})
	f.Add([]byte{10, 5})
	f.Fuzz(func(t *testing.T, program []byte) {
		var e codec.Encoder
		m := newEncoderModel()
		p := program
		next := func() byte {
			if len(p) == 0 {
				return 0
			}
			b := p[0]
			p = p[1:]
			return b
		}
		text := func() string {
			n := int(next() % 8)
			n = min(n, len(p))
			s := string(p[:n])
			p = p[n:]
			return s
		}
		for steps := 0; len(p) > 0 && steps < 512; steps++ {
			op := next() % 11
			var accepted bool
			switch op {
			case 0:
				e.Null()
				accepted = m.value(codec.Null())
			case 1:
				b := next()&1 == 1
				e.Bool(b)
				accepted = m.value(codec.Bool(b))
			case 2:
				i := int64(binary.LittleEndian.Uint64(append([]byte(text()), make([]byte, 8)...)))
				e.Long(i)
				accepted = m.value(codec.Long(i))
			case 3:
				var raw [8]byte
				for i := range raw {
					raw[i] = next()
				}
				x := math.Float64frombits(binary.LittleEndian.Uint64(raw[:]))
				e.Double(x)
				accepted = !math.IsNaN(x) && !math.IsInf(x, 0) && m.value(codec.Double(x))
			case 4:
				b := []byte(text())
				e.Bytes(b)
				accepted = m.value(codec.Bytes(b))
			case 5:
				s := text()
				e.String(s)
				accepted = utf8.ValidString(s) && m.value(codec.String(s))
			case 6, 7:
				n := int(int8(next())) % 5 // sometimes negative
				if op == 6 {
					e.BeginList(n)
				} else {
					e.BeginMap(n)
				}
				accepted = m.begin(n, op == 7)
			case 8:
				e.End()
				accepted = m.end()
			case 9:
				k := text()
				e.Key(k)
				accepted = utf8.ValidString(k) && m.key(k)
			case 10:
				v := codec.List(codec.Long(int64(next())), codec.Map(kv(text(), codec.Null())))
				e.Value(v)
				_, verr := codec.AppendDatum(nil, v)
				accepted = verr == nil && m.depth()+2 <= codec.DefaultLimits.MaxDepth && m.value(v)
			}
			if err := e.Err(); (err == nil) != accepted {
				t.Fatalf("step %d op %d: encoder error %v, model accepts %v", steps, op, err, accepted)
			}
			if !accepted {
				if codec.ErrorCode(e.Err()) == "" {
					t.Fatalf("error without a code: %v", e.Err())
				}
				return
			}
		}
		datum, err := e.Datum()
		want, complete := m.result()
		if !complete {
			if err == nil || codec.ErrorCode(err) == "" {
				t.Fatalf("incomplete value: Datum gives %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("complete value: Datum fails with %v", err)
		}
		wantDatum, err := codec.AppendDatum(nil, want)
		if err != nil {
			t.Fatalf("model value does not encode: %v", err)
		}
		if string(datum) != string(wantDatum) {
			t.Fatalf("datum %x, AppendDatum of the model value %x", datum, wantDatum)
		}
		got, err := codec.DecodeDatum(datum)
		if err != nil || !codec.Equal(got, want) {
			t.Fatalf("datum %x does not decode to the model value: %v", datum, err)
		}
	})
}

// encoderModel is the reference semantics of an Encoder call sequence: it
// builds the Value the calls describe and says which calls are in order.
type encoderModel struct {
	open    []*modelLevel
	top     codec.Value
	started bool
}

// modelLevel is one open container of the model.
type modelLevel struct {
	isMap    bool
	declared int
	items    []codec.Value
	entries  []codec.Entry
	key      *string
}

func newEncoderModel() *encoderModel { return &encoderModel{} }

func (m *encoderModel) depth() int { return len(m.open) }

// value places v where the next value goes, if one may go there.
func (m *encoderModel) value(v codec.Value) bool {
	if len(m.open) == 0 {
		if m.started {
			return false
		}
		m.started, m.top = true, v
		return true
	}
	l := m.open[len(m.open)-1]
	if l.isMap {
		if l.key == nil {
			return false
		}
		l.entries = append(l.entries, codec.Entry{Key: *l.key, Value: v})
		l.key = nil
		return true
	}
	if len(l.items) == l.declared {
		return false
	}
	l.items = append(l.items, v)
	return true
}

// begin opens a container of n items.
func (m *encoderModel) begin(n int, isMap bool) bool {
	if n < 0 || len(m.open) >= codec.DefaultLimits.MaxDepth {
		return false
	}
	if !m.value(codec.Null()) { // a placeholder, replaced at end
		return false
	}
	m.open = append(m.open, &modelLevel{isMap: isMap, declared: n})
	return true
}

// key records the key of the next entry.
func (m *encoderModel) key(k string) bool {
	if len(m.open) == 0 {
		return false
	}
	l := m.open[len(m.open)-1]
	if !l.isMap || l.key != nil || len(l.entries) == l.declared {
		return false
	}
	l.key = &k
	return true
}

// end closes the innermost container and puts it in its placeholder.
func (m *encoderModel) end() bool {
	if len(m.open) == 0 {
		return false
	}
	l := m.open[len(m.open)-1]
	if l.key != nil || len(l.items)+len(l.entries) != l.declared {
		return false
	}
	v := codec.List(l.items...)
	if l.isMap {
		v = codec.Map(l.entries...)
	}
	m.open = m.open[:len(m.open)-1]
	if len(m.open) == 0 {
		m.top = v
		return true
	}
	p := m.open[len(m.open)-1]
	if p.isMap {
		p.entries[len(p.entries)-1].Value = v
	} else {
		p.items[len(p.items)-1] = v
	}
	return true
}

// result returns the value and whether it is complete.
func (m *encoderModel) result() (codec.Value, bool) {
	return m.top, m.started && len(m.open) == 0
}
