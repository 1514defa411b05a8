package journal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// The fast path of Decode. A replay decodes every event of a journal, and
// encoding/json, driven by reflection, was its cost: the scanner reads the
// common shapes (integers, plain strings, {codec, blob} envelopes) of an
// object directly, into the fields each payload type names by key (slot).
// Any other value (a string with escapes, the options or error objects,
// times, a key the type does not read fast) is handed to encoding/json,
// alone in a document of its one key; anything that is not a plain object
// sends the whole document to encoding/json. Both paths give the same
// result, which the package's tests and fuzz target check.

// slot is where the fast path decodes the value of a key: one field is
// set, for an integer, a plain string or an envelope; none sends the value
// to encoding/json. A payload type returns its fields' slots by key, so the
// scanner does the reading and nothing it holds escapes.
type slot struct {
	int   *int
	int64 *int64
	str   *string
	env   *store.Payload
}

// decodeFast decodes data into p, a zero payload, on the fast path.
func decodeFast(data []byte, p Event) error {
	d := scanner{b: data}
	return d.object(p)
}

// errSlowPath sends a document to encoding/json.
var errSlowPath = errors.New("journal event: not a plain object")

// scanner reads one JSON document.
type scanner struct {
	b []byte
	i int
}

func (d *scanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// expect consumes c after white space.
func (d *scanner) expect(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string of valid UTF-8 without escapes or control
// characters.
func (d *scanner) str() ([]byte, error) {
	if !d.expect('"') {
		return nil, errSlowPath
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return nil, errSlowPath // encoding/json replaces bad bytes
			}
			return s, nil
		case c == '\\' || c < 0x20:
			return nil, errSlowPath
		}
		d.i++
	}
	return nil, errSlowPath
}

// int reads an integer.
func (d *scanner) int() (int64, error) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	if err != nil {
		return 0, errSlowPath
	}
	return n, nil
}

// value skips one JSON value of any kind and returns its bytes, which
// encoding/json then checks.
func (d *scanner) value() ([]byte, error) {
	d.ws()
	start := d.i
	if d.i >= len(d.b) {
		return nil, errSlowPath
	}
	switch d.b[d.i] {
	case '"':
		if err := d.skipString(); err != nil {
			return nil, err
		}
	case '{', '[':
		depth := 0
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '"':
				if err := d.skipString(); err != nil {
					return nil, err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.i++
					return d.b[start:d.i], nil
				}
			}
			d.i++
		}
		return nil, errSlowPath
	default:
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return d.b[start:d.i], nil
			}
			d.i++
		}
	}
	return d.b[start:d.i], nil
}

// skipString moves past the string that starts at d.i.
func (d *scanner) skipString() error {
	d.i++
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '\\':
			d.i += 2
			continue
		case '"':
			d.i++
			return nil
		}
		d.i++
	}
	return errSlowPath
}

// envelope reads a {codec, blob} envelope, or null.
func (d *scanner) envelope(p *store.Payload) error {
	d.ws()
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		*p = store.Payload{}
		return nil
	}
	if !d.expect('{') {
		return errSlowPath
	}
	var codecName, blob []byte
	for n := 0; ; n++ {
		if n == 0 && d.expect('}') {
			break
		}
		key, err := d.str()
		if err != nil || !d.expect(':') {
			return errSlowPath
		}
		v, err := d.str()
		if err != nil {
			return err
		}
		switch string(key) {
		case "codec":
			codecName = v
		case "blob":
			blob = v
		default:
			return errSlowPath
		}
		if d.expect('}') {
			break
		}
		if !d.expect(',') {
			return errSlowPath
		}
	}
	data := make([]byte, base64.StdEncoding.DecodedLen(len(blob)))
	n, err := base64.StdEncoding.Strict().Decode(data, blob)
	if err != nil {
		return errSlowPath
	}
	c := codec.CodecAvro // the codec of every value weft writes, without a copy
	if string(codecName) != c {
		c = string(codecName)
	}
	*p = store.Payload{Codec: c, Data: data[:n]}
	return nil
}

// object reads the event object into p.
func (d *scanner) object(p Event) error {
	if !d.expect('{') {
		return errSlowPath
	}
	if d.expect('}') {
		return d.end()
	}
	for {
		key, err := d.str()
		if err != nil || !d.expect(':') {
			return errSlowPath
		}
		if err := d.field(key, p); err != nil {
			return err
		}
		if d.expect('}') {
			return d.end()
		}
		if !d.expect(',') {
			return errSlowPath
		}
	}
}

// end checks that nothing but white space follows the document.
func (d *scanner) end() error {
	d.ws()
	if d.i != len(d.b) {
		return errSlowPath
	}
	return nil
}

// field reads the value of key into p: on the fast path when p has a slot
// for key, else through encoding/json, on a document of that one key.
func (d *scanner) field(key []byte, p Event) error {
	var err error
	switch s := p.slot(key); {
	case s.int != nil:
		var n int64
		n, err = d.int()
		*s.int = int(n)
	case s.int64 != nil:
		*s.int64, err = d.int()
	case s.str != nil:
		var v []byte
		v, err = d.str()
		*s.str = string(v)
	case s.env != nil:
		err = d.envelope(s.env)
	default:
		var raw []byte
		if raw, err = d.value(); err != nil {
			return err
		}
		doc := make([]byte, 0, len(key)+len(raw)+5)
		doc = append(append(append(append(doc, `{"`...), key...), `":`...), raw...)
		err = json.Unmarshal(append(doc, '}'), p)
	}
	return err
}
