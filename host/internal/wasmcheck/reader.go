package wasmcheck

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Reading the binary: names, LEB128 numbers, error values and where they
// point.

// name reads a UTF-8 name.
func (c *checker) name() error {
	n, err := c.r.u32()
	if err != nil {
		return err
	}
	b, err := c.r.take(uint64(n))
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return malformed("a name at byte %d is not UTF-8", c.r.pos-len(b))
	}
	return nil
}

// where names a part of the module in messages; it is formatted only when
// a message is made.
type where struct {
	kind    string
	idx     uint64
	indexed bool
	part    string
}

func at(kind string) where             { return where{kind: kind} }
func nth(kind string, i uint64) where  { return where{kind: kind, idx: i, indexed: true} }
func (w where) with(part string) where { w.part = part; return w }

// String returns e.g. "data segment 3 offset".
func (w where) String() string {
	s := w.kind
	if w.indexed {
		s += " " + strconv.FormatUint(w.idx, 10)
	}
	if w.part != "" {
		s += " " + w.part
	}
	return s
}

// lebLen returns the length of the LEB128 at b[p:] if it ends within max
// bytes (short enough to fit any integer it encodes), else 0.
func lebLen(b []byte, p, max int) int {
	for i := 0; i < max && p+i < len(b); i++ {
		if b[p+i] < 0x80 {
			return i + 1
		}
	}
	return 0
}

// reader reads b from pos, every read bounded by len(b).
type reader struct {
	b   []byte
	pos int
}

func (r *reader) left() int { return len(r.b) - r.pos }

func (r *reader) peek() (byte, bool) {
	if r.pos >= len(r.b) {
		return 0, false
	}
	return r.b[r.pos], true
}

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, malformed("unexpected end of the module at byte %d", r.pos)
	}
	b := r.b[r.pos]
	r.pos++
	return b, nil
}

func (r *reader) take(n uint64) ([]byte, error) {
	if n > uint64(r.left()) {
		return nil, malformed("%d bytes at byte %d run past the end (%d left)", n, r.pos, r.left())
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes whose value fits 32 bits.
func (r *reader) u32() (uint32, error) {
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
		v := r.b[r.pos]
		r.pos++
		return uint32(v), nil
	}
	at := r.pos
	var v uint32
	for i := 0; i < 5; i++ {
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		if i == 4 && b&0xf0 != 0 {
			return 0, malformed("an integer at byte %d overflows 32 bits", at)
		}
		v |= uint32(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v, nil
		}
	}
	return 0, malformed("an integer at byte %d is longer than 5 bytes", at)
}

// sleb skips a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits int) error {
	if r.pos < len(r.b) && r.b[r.pos] < 0x80 {
		r.pos++
		return nil
	}
	at := r.pos
	max := (bits + 6) / 7
	for i := 0; i < max; i++ {
		b, err := r.byte()
		if err != nil {
			return err
		}
		if b&0x80 == 0 {
			return nil
		}
	}
	return malformed("a signed integer at byte %d is longer than %d bytes", at, max)
}

func malformed(format string, args ...any) *Error {
	return &Error{Message: "malformed module: " + fmt.Sprintf(format, args...)}
}

// overf reports a value over a limit: "<what>; the limit is <max> (<flag>)".
func overf(flag string, max uint64, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...) + fmt.Sprintf("; the limit is %d (%s)", max, flag), Limit: flag}
}
