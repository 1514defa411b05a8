package journal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// journalTypes are the journal's event types, in the order of docs/workflows.md.
var journalTypes = []string{
	EventActivityScheduled, EventActivityCompleted, EventActivityFailed, EventTimerStarted,
	EventTimerFired, EventSignalWaiting, EventSignalReceived, EventSignalTimedOut,
}

// zeroOf returns a new zero payload of type typ.
func zeroOf(tb testing.TB, typ string) Event {
	tb.Helper()
	ev, err := Decode(typ, []byte(`{}`))
	require.NoError(tb, err)
	return reflect.New(reflect.TypeOf(ev).Elem()).Interface().(Event)
}

// requireSameDecode checks that Decode and encoding/json agree on doc as a
// payload of type typ: the same event, or both an error.
func requireSameDecode(tb testing.TB, typ string, doc []byte) {
	tb.Helper()
	want := zeroOf(tb, typ)
	wantErr := json.Unmarshal(doc, want)
	got, gotErr := Decode(typ, doc)
	if wantErr != nil {
		require.Error(tb, gotErr, "%s doc %q", typ, doc)
		return
	}
	require.NoError(tb, gotErr, "%s doc %q", typ, doc)
	require.Equal(tb, want, got, "%s doc %q", typ, doc)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 4, 3, 2, 1, 123_000_000, time.UTC)
	ms := int64(1500)
	frame := store.Payload{Codec: "avro", Data: []byte{0xc3, 0x01, 1, 2, 3}}
	events := []Event{
		&ActivityScheduled{},
		&ActivityScheduled{Attempt: 2, FutureID: 7, TaskID: "task_01", Module: "pipeline", Function: "build", Digest: "sha256:ab", Input: frame},
		&ActivityScheduled{Attempt: 1, FutureID: 3, Module: "m", Function: "f", Input: frame, Options: &ActivityOptions{
			TimeoutMS: 60000,
			Retry:     &RetryRecord{MaxAttempts: 3, InitialIntervalMS: 100, BackoffCoefficient: 2.5, MaxIntervalMS: 1000, NonRetryableErrorTypes: []string{"bad", "worse"}},
		}},
		&ActivityCompleted{TaskID: "task_02", Output: frame},
		&ActivityFailed{TaskID: "task_03", Error: &store.TaskError{Code: "application_error", Message: "it \"broke\"\n", Type: "boom", NonRetryable: true, Details: frame}},
		&ActivityFailed{Attempt: 1, FutureID: 4, Error: &store.TaskError{Code: "module_not_found", Message: "x"}, FailedAt: &at},
		&TimerStarted{Attempt: 1, FutureID: 5, DurationMS: 250, FireAt: &at},
		&TimerFired{Attempt: 1, FutureID: 5},
		&SignalWaiting{Attempt: 1, FutureID: 6, Name: "approve", TimeoutMS: &ms, Deadline: &at},
		&SignalReceived{Name: "approve", Payload: frame},
		&SignalReceived{Name: "ünïcode ✓", Payload: store.Payload{Codec: "avro", Data: []byte{}}},
		&SignalTimedOut{Attempt: 1, FutureID: 6},
	}
	for i, ev := range events {
		d, err := Encode(ev)
		require.NoError(t, err)
		require.Equal(t, ev.Type(), d.Type)
		requireSameDecode(t, ev.Type(), d.Payload)
		got, err := Decode(d.Type, d.Payload)
		require.NoError(t, err)
		require.Equal(t, ev, got, "event %d", i)
	}
	tests := []struct {
		name string
		doc  string
	}{
		{name: "Spaces", doc: " { \"attempt\" : 1 , \"task_id\" :\t\"task_x\" ,\n\"input_envelope\": {\"codec\": \"avro\", \"blob\": \"wwE=\"} } "},
		{name: "Escape", doc: `{"task_id":"task_\u0041","name":"a\"b"}`},
		{name: "NullEnvelope", doc: `{"output_envelope":null,"payload_envelope":null}`},
		{name: "NullString", doc: `{"task_id":null}`},
		{name: "UnknownKey", doc: `{"attempt":1,"extra":{"a":[1,2,{"b":"}"}]},"future_id":2}`},
		{name: "OtherKindsKey", doc: `{"attempt":1,"duration_ms":5,"name":"n","module":"m","output_envelope":{"codec":"avro","blob":"wwE="}}`},
		{name: "CaseInsensitiveKey", doc: `{"Attempt":3,"TASK_ID":"t"}`},
		{name: "DuplicateKey", doc: `{"attempt":1,"attempt":2}`},
		{name: "EnvelopeExtra", doc: `{"input_envelope":{"codec":"avro","blob":"wwE=","x":1}}`},
		{name: "BadBase64", doc: `{"input_envelope":{"codec":"avro","blob":"!!"}}`},
		{name: "FloatAttempt", doc: `{"attempt":1.5}`},
		{name: "Trailing", doc: `{"attempt":1} x`},
		{name: "Truncated", doc: `{"attempt":1`},
		{name: "NotObject", doc: `[1]`},
		{name: "Empty", doc: ``},
		{name: "EmptyObject", doc: `{}`},
		{name: "BadUnknownValue", doc: `{"extra":{"a":}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, typ := range journalTypes {
				requireSameDecode(t, typ, []byte(tc.doc))
			}
		})
	}
	_, err := Decode("task.progress", []byte(`{}`))
	require.ErrorIs(t, err, ErrUnknownEvent)
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"attempt":1,"future_id":2,"task_id":"task_01","module":"m","function":"f","input_envelope":{"codec":"avro","blob":"wwE="}}`,
		`{"task_id":"t","output_envelope":{"codec":"avro","blob":""}}`,
		`{"name":"a","timeout_ms":-1,"deadline":"2026-01-02T03:04:05Z"}`,
		`{"options":{"timeout_ms":5,"retry":{"maximum_attempts":3}},"error":{"code":"x","message":"y"}}`,
		`{"options":{"retry":{"max_attempts":3,"max_interval_ms":9}}}`,
		`{"name":"s","payload_envelope":{"codec":"avro","blob":"wwE="}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, typ := range journalTypes {
			requireSameDecode(t, typ, doc)
		}
	})
}

// BenchmarkDecode decodes the payload of an activity.scheduled event, the
// most common event of a journal, through Decode and through encoding/json
// alone.
func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"attempt":1,"future_id":42,"task_id":"task_01M8QH3KER51A51Q2FDX5ZT5MC","module":"wfbench","function":"echo",` +
		`"module_digest":"sha256:cc1c68c38202773ee6b75e8f427e5265b621092f632b3626896751c0389a6ffe","input_envelope":{"codec":"avro","blob":"wwHioz3/VYAiNwRU"}}`)
	b.Run("Scanner", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := Decode(EventActivityScheduled, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodingJSON", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var p ActivityScheduled
			if err := json.Unmarshal(doc, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
