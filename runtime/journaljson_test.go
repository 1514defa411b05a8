package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// requireSameDecode checks that decodeJournalEvent and encoding/json agree
// on doc: the same event, or both an error.
func requireSameDecode(tb testing.TB, doc []byte) {
	tb.Helper()
	var want, got journalEvent
	wantErr := json.Unmarshal(doc, &want)
	gotErr := decodeJournalEvent(doc, &got)
	if wantErr != nil {
		require.Error(tb, gotErr, "doc %q", doc)
		return
	}
	require.NoError(tb, gotErr, "doc %q", doc)
	require.Equal(tb, want, got, "doc %q", doc)
}

func TestDecodeJournalEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 4, 3, 2, 1, 123_000_000, time.UTC)
	ms := int64(1500)
	frame := store.Payload{Codec: "avro", Data: []byte{0xc3, 0x01, 1, 2, 3}}
	events := []journalEvent{
		{},
		{Attempt: 2, FutureID: 7, TaskID: "task_01", Module: "pipeline", Function: "build", Digest: "sha256:ab", Input: frame},
		{Attempt: 1, FutureID: 3, Module: "m", Function: "f", Input: frame, Options: &activityOptions{
			TimeoutMS: 60000,
			Retry:     &retryRecord{MaxAttempts: 3, InitialIntervalMS: 100, BackoffCoefficient: 2.5, MaxIntervalMS: 1000, NonRetryableErrorTypes: []string{"bad", "worse"}},
		}},
		{TaskID: "task_02", Output: frame},
		{TaskID: "task_03", Error: &store.TaskError{Code: "application_error", Message: "it \"broke\"\n", Type: "boom", NonRetryable: true, Details: frame}},
		{Attempt: 1, FutureID: 4, Error: &store.TaskError{Code: "module_not_found", Message: "x"}, FailedAt: &at},
		{Attempt: 1, FutureID: 5, DurationMS: 250, FireAt: &at},
		{Attempt: 1, FutureID: 6, Name: "approve", TimeoutMS: &ms, Deadline: &at},
		{Name: "approve", Payload: frame},
		{Name: "ünïcode ✓", Payload: store.Payload{Codec: "avro", Data: []byte{}}},
	}
	for i, ev := range events {
		doc, err := json.Marshal(&ev)
		require.NoError(t, err)
		requireSameDecode(t, doc)
		var got journalEvent
		require.NoError(t, decodeJournalEvent(doc, &got))
		require.Equal(t, ev, got, "event %d", i)
	}
	tests := []struct {
		name string
		doc  string
	}{
		{name: "Spaces", doc: " { \"attempt\" : 1 , \"task_id\" :\t\"task_x\" ,\n\"input_envelope\": {\"codec\": \"avro\", \"blob\": \"wwE=\"} } "},
		{name: "Escape", doc: `{"task_id":"task_\u0041","name":"a\"b"}`},
		{name: "NullEnvelope", doc: `{"output_envelope":null}`},
		{name: "NullString", doc: `{"task_id":null}`},
		{name: "UnknownKey", doc: `{"attempt":1,"extra":{"a":[1,2,{"b":"}"}]},"future_id":2}`},
		{name: "CaseInsensitiveKey", doc: `{"Attempt":3}`},
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
			requireSameDecode(t, []byte(tc.doc))
		})
	}
}

func FuzzDecodeJournalEvent(f *testing.F) {
	for _, s := range []string{
		`{"attempt":1,"future_id":2,"task_id":"task_01","module":"m","function":"f","input_envelope":{"codec":"avro","blob":"wwE="}}`,
		`{"task_id":"t","output_envelope":{"codec":"avro","blob":""}}`,
		`{"name":"a","timeout_ms":-1,"deadline":"2026-01-02T03:04:05Z"}`,
		`{"options":{"timeout_ms":5,"retry":{"maximum_attempts":3}},"error":{"code":"x","message":"y"}}`,
		`{"options":{"retry":{"max_attempts":3,"max_interval_ms":9}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		requireSameDecode(t, doc)
	})
}

func BenchmarkDecodeJournalEvent(b *testing.B) {
	doc := []byte(`{"attempt":1,"future_id":42,"task_id":"task_01M8QH3KER51A51Q2FDX5ZT5MC","module":"wfbench","function":"echo",` +
		`"module_digest":"sha256:cc1c68c38202773ee6b75e8f427e5265b621092f632b3626896751c0389a6ffe","input_envelope":{"codec":"avro","blob":"wwHioz3/VYAiNwRU"}}`)
	b.Run("Scanner", func(b *testing.B) {
		for range b.N {
			var p journalEvent
			if err := decodeJournalEvent(doc, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodingJSON", func(b *testing.B) {
		for range b.N {
			var p journalEvent
			if err := json.Unmarshal(doc, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
