package guest

import (
	"fmt"
	"strings"

	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// Logger sends log lines to the host, which records them as the task's log
// and forwards them to the plugin's logger. Key-value pairs are appended as
// key=value. The zero Logger is ready to use.
type Logger struct{}

// Debug logs at debug level.
func (Logger) Debug(msg string, keyvals ...any) { logAt(abi.LevelDebug, msg, keyvals) }

// Info logs at info level.
func (Logger) Info(msg string, keyvals ...any) { logAt(abi.LevelInfo, msg, keyvals) }

// Warn logs at warn level.
func (Logger) Warn(msg string, keyvals ...any) { logAt(abi.LevelWarn, msg, keyvals) }

// Error logs at error level.
func (Logger) Error(msg string, keyvals ...any) { logAt(abi.LevelError, msg, keyvals) }

func logAt(level abi.LogLevel, msg string, keyvals []any) {
	hostcall.Log(level, Format(msg, keyvals))
}

// Format appends key=value pairs to msg; an odd trailing key gets the value
// "(missing)".
func Format(msg string, keyvals []any) string {
	if len(keyvals) == 0 {
		return msg
	}
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i < len(keyvals); i += 2 {
		var v any = "(missing)"
		if i+1 < len(keyvals) {
			v = keyvals[i+1]
		}
		fmt.Fprintf(&b, " %v=%v", keyvals[i], v)
	}
	return b.String()
}
