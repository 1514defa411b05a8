package runtime

import (
	"github.com/weft-run/weft/runtime/internal/callrec"
	"github.com/weft-run/weft/store"
)

// EventLog is the type of the events that carry a plugin's log lines: its
// log import and every line it wrote to stdout or stderr. The payload is
// {"level", "message", "time"}; a final {"dropped": N} says how many lines
// of the call went over MaxLogEvents.
const EventLog = callrec.EventLog

// MaxLogEvents is the most log events one call appends. A guest that logs
// more still reaches the plugin's logger; its task's event log records the
// first MaxLogEvents lines of each call and how many were dropped.
const MaxLogEvents = callrec.MaxLogEvents

// EventProgress is the type of the events that carry an activity's
// progress reports: {"done": N, "total": N, "message": "…"}, total 0 when
// unknown, message left out when empty. One call appends at most one per
// Config.ProgressInterval, and the last report of the call is always
// recorded; the task's Progress field is the latest one.
const EventProgress = store.EventProgress
