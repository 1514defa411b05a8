package journal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// ms is a time of the tests' logs, n milliseconds after the epoch: the
// journal's String prints times so.
func ms(n int64) time.Time { return time.UnixMilli(n).UTC() }

// logEvent is an event of a test log: a journal event, or a raw one.
type logEvent struct {
	at      int64
	ev      Event
	typ     string // with payload, for a raw event
	payload string
}

func typed(at int64, ev Event) logEvent { return logEvent{at: at, ev: ev} }

func raw(at int64, typ, payload string) logEvent { return logEvent{at: at, typ: typ, payload: payload} }

func inProgress(at int64, attempt int) logEvent {
	return raw(at, store.EventResponseInProgress, fmt.Sprintf(`{"status":"running","attempt":%d}`, attempt))
}

func logLine(at int64, msg string) logEvent {
	return raw(at, store.EventLog, fmt.Sprintf(`{"level":"info","message":%q,"time":"2026-01-01T00:00:00Z"}`, msg))
}

// toStore turns the test log into the events of a task's log, numbered
// from 0.
func toStore(tb testing.TB, log []logEvent) []*store.Event {
	tb.Helper()
	out := make([]*store.Event, len(log))
	for i, e := range log {
		ev := &store.Event{TaskID: "task_wf", Seq: int64(i), Type: e.typ, Payload: []byte(e.payload), CreatedAt: ms(e.at)}
		if e.ev != nil {
			d, err := Encode(e.ev)
			require.NoError(tb, err)
			ev.Type, ev.Payload = d.Type, d.Payload
		}
		out[i] = ev
	}
	return out
}

// null is the hex of the null frame, as String prints a frame.
var null = fmt.Sprintf("%x", nullFrame)

func TestApply(t *testing.T) {
	t.Parallel()
	frame := func(s string) store.Payload { return store.Payload{Codec: "avro", Data: []byte(s)} }
	fireAt, deadline := ms(500), ms(300)
	timeout, noTimeout := int64(200), int64(-1)
	sched := func(step int64, task string) *ActivityScheduled {
		return &ActivityScheduled{Attempt: 1, FutureID: step, TaskID: task, Module: "m", Function: "f", Input: frame("in")}
	}
	wait := func(step int64, name string) *SignalWaiting {
		return &SignalWaiting{Attempt: 1, FutureID: step, Name: name, TimeoutMS: &noTimeout}
	}
	tests := []struct {
		name    string
		attempt int // of the journal; 0 means 1
		log     []logEvent
		want    []string // String's lines; the first is the header
		err     string
	}{
		{
			name: "Empty",
			want: []string{"attempt=1 start=- last=-1 logged=0"},
		},
		{
			name: "StartOfTheAttempt",
			log:  []logEvent{inProgress(10, 0), inProgress(20, 1), raw(21, store.EventProgress, `{"done":1}`)},
			want: []string{"attempt=1 start=20 last=2 logged=0"},
		},
		{
			name: "UnknownKindsChangeNothing",
			log:  []logEvent{inProgress(1, 1), raw(2, "x.unknown", `not json`), raw(3, store.EventStatusChanged, `{}`)},
			want: []string{"attempt=1 start=1 last=2 logged=0"},
		},
		{
			name: "ActivityCompleted",
			log:  []logEvent{inProgress(1, 1), typed(2, sched(1, "task_a")), typed(7, &ActivityCompleted{TaskID: "task_a", Output: frame("A")})},
			want: []string{
				"attempt=1 start=1 last=2 logged=0",
				`cmd 1 activity m.f(<2 bytes>) task=task_a`,
				"res 1 order=0 at=7 outcome=0 frame=41",
			},
		},
		{
			name: "DuplicateCompletionKeepsTheFirst",
			log: []logEvent{
				typed(2, sched(1, "task_a")),
				typed(7, &ActivityCompleted{TaskID: "task_a", Output: frame("A")}),
				typed(8, &ActivityCompleted{TaskID: "task_a", Output: frame("B")}),
				typed(9, &ActivityFailed{TaskID: "task_a"}),
			},
			want: []string{
				"attempt=1 start=- last=3 logged=0",
				`cmd 1 activity m.f(<2 bytes>) task=task_a`,
				"res 1 order=0 at=7 outcome=0 frame=41",
			},
		},
		{
			name: "CompletionOfAnotherTaskIsIgnored",
			log:  []logEvent{typed(2, sched(1, "task_a")), typed(7, &ActivityCompleted{TaskID: "task_z", Output: frame("Z")})},
			want: []string{"attempt=1 start=- last=1 logged=0", `cmd 1 activity m.f(<2 bytes>) task=task_a`},
		},
		{
			name: "NotScheduled",
			log: []logEvent{
				typed(2, &ActivityScheduled{Attempt: 1, FutureID: 1, Module: "x", Function: "f", Input: frame("in")}),
				typed(2, &ActivityFailed{Attempt: 1, FutureID: 1, Error: &store.TaskError{Code: "module_not_found", Message: "no"}, FailedAt: &deadline}),
			},
			want: []string{
				"attempt=1 start=- last=1 logged=0",
				`cmd 1 activity x.f(<2 bytes>)`,
				// The error Value: type module_not_found, message "no".
				"res 1 order=0 at=300 outcome=1 frame=" + errorHex(t, &store.TaskError{Code: "module_not_found", Message: "no"}),
			},
		},
		{
			name: "OutOfOrderStep",
			log:  []logEvent{typed(2, sched(1, "task_a")), typed(3, sched(3, "task_c"))},
			err:  "command of step 3 after step 1",
		},
		{
			name: "RepeatedStep",
			log:  []logEvent{typed(2, sched(1, "task_a")), typed(3, &TimerStarted{Attempt: 1, FutureID: 1, FireAt: &fireAt})},
			err:  "command of step 1 after step 1",
		},
		{
			name: "TimerWithoutFireTime",
			log:  []logEvent{typed(2, &TimerStarted{Attempt: 1, FutureID: 1, DurationMS: 5})},
			err:  "timer without fire_at",
		},
		{
			name: "BadPayload",
			log:  []logEvent{raw(2, EventTimerStarted, `{"attempt":"one"}`)},
			err:  "json",
		},
		{
			name: "TimerFired",
			log: []logEvent{
				typed(2, &TimerStarted{Attempt: 1, FutureID: 1, DurationMS: 498, FireAt: &fireAt}),
				typed(600, &TimerFired{Attempt: 1, FutureID: 1}),
				typed(601, &TimerFired{Attempt: 1, FutureID: 2}), // no such step
			},
			want: []string{
				"attempt=1 start=- last=2 logged=0",
				"cmd 1 timer 498ms fire=500",
				"res 1 order=0 at=500 outcome=0 frame=" + null, // the timer's time, not the event's
			},
		},
		{
			name: "SignalBeforeTheWait",
			log: []logEvent{
				typed(5, &SignalReceived{Name: "s", Payload: frame("1")}),
				typed(6, &SignalReceived{Name: "s", Payload: frame("2")}),
				typed(9, wait(1, "s")),
			},
			want: []string{
				"attempt=1 start=- last=2 logged=0",
				`cmd 1 signal "s" without timeout`,
				"res 1 order=0 at=5 outcome=0 frame=31", // the oldest, at its arrival
				"buffered s 32 6",
			},
		},
		{
			name: "SignalAfterTheWait",
			log: []logEvent{
				typed(2, wait(1, "s")),
				typed(3, wait(2, "s")),
				typed(8, &SignalReceived{Name: "s"}),
				typed(9, &SignalReceived{Name: "other", Payload: frame("o")}),
			},
			want: []string{
				"attempt=1 start=- last=3 logged=0",
				`cmd 1 signal "s" without timeout`,
				"res 1 order=0 at=8 outcome=0 frame=" + null, // a signal without a value is null
				`cmd 2 signal "s" without timeout`,
				"waits s [2]",
				"buffered other 6f 9",
			},
		},
		{
			name: "SignalTimedOut",
			log: []logEvent{
				typed(2, &SignalWaiting{Attempt: 1, FutureID: 1, Name: "s", TimeoutMS: &timeout, Deadline: &deadline}),
				typed(310, &SignalTimedOut{Attempt: 1, FutureID: 1}),
				typed(320, &SignalReceived{Name: "s", Payload: frame("late")}),
			},
			want: []string{
				"attempt=1 start=- last=2 logged=0",
				`cmd 1 signal "s" with timeout 200ms deadline=300`,
				"res 1 order=0 at=300 outcome=2 frame=",
				"buffered s 6c617465 320", // kept for the next wait
			},
		},
		{
			name:    "EarlierAttemptIsIgnored",
			attempt: 2,
			log: []logEvent{
				inProgress(1, 1),
				typed(2, sched(1, "task_old")),
				typed(3, &ActivityFailed{Attempt: 1, FutureID: 1, Error: &store.TaskError{Code: "x"}, FailedAt: &deadline}),
				inProgress(10, 2),
				typed(11, &ActivityScheduled{Attempt: 2, FutureID: 1, TaskID: "task_new", Module: "m", Function: "f", Input: frame("in")}),
				typed(12, &ActivityCompleted{TaskID: "task_old", Output: frame("old")}),
				typed(13, &TimerStarted{Attempt: 1, FutureID: 2, FireAt: &fireAt}),
			},
			want: []string{
				"attempt=2 start=10 last=6 logged=0",
				`cmd 1 activity m.f(<2 bytes>) task=task_new`,
			},
		},
		{
			name: "LogLinesSinceTheStart",
			log: []logEvent{
				logLine(0, "before the attempt"),
				inProgress(1, 1),
				logLine(2, "one"),
				logLine(3, "dropped"),
				raw(4, store.EventLog, `{"dropped":7}`),
				logLine(5, `{"dropped": 1}`),
			},
			want: []string{"attempt=1 start=1 last=5 logged=3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := New(&store.Task{ID: "task_wf", Attempt: max(tc.attempt, 1)})
			var err error
			for _, ev := range toStore(t, tc.log) {
				if err = j.Apply(ev); err != nil {
					break
				}
			}
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			want := slices.Clone(tc.want)
			slices.Sort(want[1:])
			require.Equal(t, strings.Join(want, "\n"), j.String())
		})
	}
}

func errorHex(tb testing.TB, te *store.TaskError) string {
	tb.Helper()
	f, err := errorValueFrame(te)
	require.NoError(tb, err)
	return fmt.Sprintf("%x", f)
}

// TestPending: the journal tells whether child activities are still
// running and how many signals it holds for later.
func TestPending(t *testing.T) {
	t.Parallel()
	j := New(&store.Task{ID: "task_wf", Attempt: 1})
	for _, ev := range toStore(t, []logEvent{
		typed(1, &ActivityScheduled{Attempt: 1, FutureID: 1, TaskID: "task_a", Module: "m", Function: "f"}),
		typed(2, &SignalReceived{Name: "s", Payload: store.Payload{Codec: "avro", Data: []byte("abc")}}),
		typed(3, &SignalReceived{Name: "t", Payload: store.Payload{Codec: "avro", Data: []byte("de")}}),
	}) {
		require.NoError(t, j.Apply(ev))
	}
	require.True(t, j.PendingActivities())
	n, size := j.PendingSignals()
	require.Equal(t, 2, n)
	require.Equal(t, int64(5), size)
	d, err := Encode(&ActivityCompleted{TaskID: "task_a"})
	require.NoError(t, err)
	require.NoError(t, j.Apply(&store.Event{Seq: 3, Type: d.Type, Payload: d.Payload}))
	require.False(t, j.PendingActivities())

	// A committed run's log lines count as the log would count them.
	line, err := json.Marshal(map[string]string{"level": "info", "message": "x"})
	require.NoError(t, err)
	j.Committed(9, []store.EventDraft{{Type: store.EventLog, Payload: line}, {Type: store.EventLog, Payload: []byte(`{"dropped":2}`)}})
	require.Equal(t, int64(9), j.LastSeq())
	require.Equal(t, 1, j.Logged())
}

// BenchmarkApply builds the journal of a workflow that ran 500 activities
// from its log of 1,000 journal events, as a run that reads the log does.
func BenchmarkApply(b *testing.B) {
	in := store.Payload{Codec: "avro", Data: []byte{0xc3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	var log []logEvent
	for i := range int64(500) {
		id := fmt.Sprintf("task_01M8QH3KER51A51Q2FDX5Z%04d", i)
		log = append(log,
			typed(i, &ActivityScheduled{Attempt: 1, FutureID: i + 1, TaskID: id, Module: "wfbench", Function: "echo", Digest: "sha256:cc1c68c38202773ee6b75e8f427e5265b621092f632b3626896751c0389a6ffe", Input: in}),
			typed(i, &ActivityCompleted{TaskID: id, Output: in}))
	}
	evs := toStore(b, log)
	task := &store.Task{ID: "task_wf", Attempt: 1}
	b.ReportAllocs()
	for range b.N {
		j := New(task)
		for _, ev := range evs {
			if err := j.Apply(ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}
