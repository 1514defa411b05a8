package runtime

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/weft-run/weft/store"
)

// decodeJournalEvent decodes the payload of a journal event into p. A
// replay decodes every event of a journal, so the common shapes (numbers,
// plain strings, {codec, blob} envelopes) take a direct path; anything
// else (a string with escapes, the options or error objects, times, a key
// it does not know) is handed to encoding/json, on the value alone or, if
// the document is not a plain object, on the whole document. Both paths
// give the same result.
func decodeJournalEvent(data []byte, p *journalEvent) error {
	*p = journalEvent{}
	d := jsonScanner{b: data}
	if err := d.object(p); err != nil {
		*p = journalEvent{}
		return json.Unmarshal(data, p)
	}
	return nil
}

// errSlowPath sends a document to encoding/json.
var errSlowPath = errors.New("journal event: not a plain object")

// jsonScanner reads one JSON document.
type jsonScanner struct {
	b []byte
	i int
}

func (d *jsonScanner) ws() {
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
func (d *jsonScanner) expect(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string of valid UTF-8 without escapes or control
// characters.
func (d *jsonScanner) str() ([]byte, error) {
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
func (d *jsonScanner) int() (int64, error) {
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
func (d *jsonScanner) value() ([]byte, error) {
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
func (d *jsonScanner) skipString() error {
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
func (d *jsonScanner) envelope(p *store.Payload) error {
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
	*p = store.Payload{Codec: string(codecName), Data: data[:n]}
	return nil
}

// object reads the journal event object into p.
func (d *jsonScanner) object(p *journalEvent) error {
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
		if err := d.field(string(key), p); err != nil {
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
func (d *jsonScanner) end() error {
	d.ws()
	if d.i != len(d.b) {
		return errSlowPath
	}
	return nil
}

// field reads the value of key into p.
func (d *jsonScanner) field(key string, p *journalEvent) error {
	var err error
	switch key {
	case "attempt":
		var n int64
		n, err = d.int()
		p.Attempt = int(n)
	case "future_id":
		p.FutureID, err = d.int()
	case "duration_ms":
		p.DurationMS, err = d.int()
	case "task_id", "module", "function", "module_digest", "name":
		var s []byte
		if s, err = d.str(); err == nil {
			switch key {
			case "task_id":
				p.TaskID = string(s)
			case "module":
				p.Module = string(s)
			case "function":
				p.Function = string(s)
			case "module_digest":
				p.Digest = string(s)
			default:
				p.Name = string(s)
			}
		}
	case "input_envelope":
		err = d.envelope(&p.Input)
	case "output_envelope":
		err = d.envelope(&p.Output)
	case "payload_envelope":
		err = d.envelope(&p.Payload)
	default:
		// A rarer field: encoding/json reads its value into a document of
		// that one key.
		var raw []byte
		if raw, err = d.value(); err == nil {
			doc := make([]byte, 0, len(key)+len(raw)+5)
			doc = append(append(append(append(doc, `{"`...), key...), `":`...), raw...)
			err = json.Unmarshal(append(doc, '}'), p)
		}
	}
	return err
}
