package check

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// Digest is a well-formed module digest for tests.
const Digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Frame returns an opaque frame for tests: the store must keep the bytes
// exactly, whatever they are.
func Frame(s string) store.Payload {
	return store.Payload{Codec: "avro", Data: append([]byte{0xc3, 0x01, 0xe2, 0xa3, 0x3d, 0xff, 0x55, 0x80, 0x22, 0x37, 0x0a}, s...)}
}

// MustInsertTask inserts a task with test defaults for the required fields
// that p leaves empty.
func MustInsertTask(tb testing.TB, s store.Store, p *store.TaskInsertParams) *store.Task {
	tb.Helper()
	if p == nil {
		p = &store.TaskInsertParams{}
	}
	if p.Module == "" {
		p.Module = "echo"
	}
	if p.ModuleDigest == "" {
		p.ModuleDigest = Digest
	}
	if p.Function == "" {
		p.Function = "echo"
	}
	t, err := s.TaskInsert(tb.Context(), p)
	require.NoError(tb, err)
	return t
}

// MustTransition moves a task from one status to another.
func MustTransition(tb testing.TB, s store.Store, p *store.TaskTransitionParams) *store.Task {
	tb.Helper()
	t, err := s.TaskTransition(tb.Context(), p)
	require.NoError(tb, err)
	require.Equal(tb, p.To, t.Status)
	return t
}

// MustRunning inserts a task and brings it to running through claim and
// transition, as a worker would.
func MustRunning(tb testing.TB, s store.Store, p *store.TaskInsertParams) *store.Task {
	tb.Helper()
	t := MustInsertTask(tb, s, p)
	MustLoading(tb, s, t.ID)
	return MustTransition(tb, s, &store.TaskTransitionParams{ID: t.ID, From: []store.Status{store.StatusLoading}, To: store.StatusRunning})
}

// MustLoading moves a queued task to loading, as TaskClaim does, with a
// CAS transition so that only that task is affected.
func MustLoading(tb testing.TB, s store.Store, id string) *store.Task {
	tb.Helper()
	return MustTransition(tb, s, &store.TaskTransitionParams{ID: id, From: []store.Status{store.StatusQueued}, To: store.StatusLoading})
}

// MustEvents returns every event of a task.
func MustEvents(tb testing.TB, s store.Store, id string) []*store.Event {
	tb.Helper()
	var out []*store.Event
	for from := int64(0); ; {
		page, err := s.EventList(tb.Context(), &store.EventListParams{TaskID: id, From: from, Limit: 1000})
		require.NoError(tb, err)
		out = append(out, page...)
		if len(page) < 1000 {
			return out
		}
		from = page[len(page)-1].Seq + 1
	}
}

// EventStatus returns the status an event records and whether it records
// one: the "status" field of a status event's payload.
func EventStatus(tb testing.TB, e *store.Event) (store.Status, bool) {
	tb.Helper()
	if !store.IsStatusEvent(e.Type) {
		return "", false
	}
	var p struct {
		Status store.Status `json:"status"`
	}
	require.NoError(tb, json.Unmarshal(e.Payload, &p), "event %s#%d payload", e.TaskID, e.Seq)
	require.True(tb, p.Status.Valid(), "event %s#%d has no valid status: %s", e.TaskID, e.Seq, e.Payload)
	return p.Status, true
}

// MustCheckLog checks the invariants of one task's log and returns the
// task: sequence numbers run 0..LastSeq with no gap; the first event is
// response.created; every status event follows the state machine from the
// previous one; the task's status is the one its last status event records;
// a finished task has exactly one terminal event, its last, carrying the
// response.
func MustCheckLog(tb testing.TB, s store.Store, id string) *store.Task {
	tb.Helper()
	task, err := s.TaskGet(tb.Context(), id)
	require.NoError(tb, err)
	events := MustEvents(tb, s, id)
	require.NotEmpty(tb, events, "task %s has no events", id)
	require.Equal(tb, store.EventResponseCreated, events[0].Type, "task %s: first event", id)
	var (
		status    store.Status
		terminals int
	)
	for i, e := range events {
		require.Equal(tb, int64(i), e.Seq, "task %s: sequence gap", id)
		require.Equal(tb, id, e.TaskID)
		require.True(tb, json.Valid(e.Payload), "task %s#%d: payload is not JSON", id, e.Seq)
		st, ok := EventStatus(tb, e)
		if !ok {
			continue
		}
		switch {
		case i == 0:
			require.Equal(tb, store.StatusQueued, st, "task %s: response.created status", id)
		case e.Type == store.EventRecovered:
			// Recovery keeps a running task running; a takeover records
			// the status it found before it moves the task on.
			require.Equal(tb, status, st, "task %s#%d: recovered from %s", id, e.Seq, status)
			require.Contains(tb, []store.Status{store.StatusLoading, store.StatusRunning, store.StatusCancelling}, st,
				"task %s#%d: recovered in %s", id, e.Seq, st)
		default:
			require.True(tb, store.CanTransition(status, st), "task %s#%d: %s → %s is not a transition", id, e.Seq, status, st)
		}
		status = st
		if store.IsTerminalEvent(e.Type) {
			terminals++
			require.Equal(tb, len(events)-1, i, "task %s: events after the terminal event", id)
			require.Equal(tb, store.TerminalEventType(st), e.Type, "task %s: terminal type and status", id)
			var resp store.Response
			require.NoError(tb, json.Unmarshal(e.Payload, &resp))
			require.Equal(tb, store.ResponseIDFor(id), resp.ID)
			require.Equal(tb, id, resp.TaskID)
		}
	}
	require.Equal(tb, int64(len(events)-1), task.LastSeq, "task %s: last_seq", id)
	require.Equal(tb, task.Status, status, "task %s: status disagrees with its last status event", id)
	if task.Status.IsTerminal() {
		require.Equal(tb, 1, terminals, "task %s: terminal events", id)
		require.False(tb, task.FinishedAt.IsZero())
	} else {
		require.Zero(tb, terminals, "task %s: terminal event on an unfinished task", id)
		require.True(tb, task.FinishedAt.IsZero())
	}
	return task
}

// Types returns the event types of a log, for compact assertions.
func Types(events []*store.Event) string {
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = e.Type
	}
	return strings.Join(parts, " ")
}

// IDsOf returns the ids of ts, in order.
func IDsOf(ts []*store.Task) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}
