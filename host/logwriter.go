package host

import (
	"bytes"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// lineWriter turns what a guest writes to stdout or stderr into log lines
// of the call. A line longer than abi.MaxLogLen is cut into several; a last
// line without a newline is flushed when the guest call returns.
type lineWriter struct {
	inst   *instance
	source string
	level  abi.LogLevel
	buf    []byte
}

// Write implements io.Writer for the guest's file descriptor.
func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= abi.MaxLogLen {
				w.emit(w.buf[:abi.MaxLogLen])
				w.buf = append(w.buf[:0], w.buf[abi.MaxLogLen:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

// flush emits the pending partial line, if any.
func (w *lineWriter) flush() {
	if len(w.buf) == 0 {
		return
	}
	for len(w.buf) > abi.MaxLogLen {
		w.emit(w.buf[:abi.MaxLogLen])
		w.buf = w.buf[abi.MaxLogLen:]
	}
	w.emit(w.buf)
	w.buf = w.buf[:0]
	if cap(w.buf) > 4*abi.MaxLogLen {
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	if s := sanitize(line); s != "" {
		w.inst.emit(w.level, w.source, s)
	}
}
