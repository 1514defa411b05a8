package journal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// storedForms are payloads as the engine stored them before the journal's
// events were typed, one per shape a run, a child's end or a signal wrote:
// logs in existing databases hold exactly these bytes.
var storedForms = []struct {
	typ, doc string
}{
	{EventActivityScheduled, `{"attempt":1,"future_id":1,"task_id":"task_01","module":"m","function":"f","module_digest":"sha256:ab","input_envelope":{"codec":"avro","blob":"wwEBAgM="}}`},
	{EventActivityScheduled, `{"attempt":2,"future_id":3,"task_id":"task_02","module":"m","function":"f","module_digest":"sha256:ab","input_envelope":{"codec":"avro","blob":"wwEBAgM="},"options":{"timeout_ms":5000,"retry":{"maximum_attempts":3,"initial_interval_ms":100,"backoff_coefficient":2,"maximum_interval_ms":1000,"non_retryable_error_types":["bad"]}}}`},
	{EventActivityScheduled, `{"attempt":1,"future_id":2,"module":"x","function":"f","input_envelope":{"codec":"avro","blob":"wwEBAgM="}}`},
	{EventActivityCompleted, `{"task_id":"task_01","output_envelope":{"codec":"avro","blob":"wwEBAgM="}}`},
	{EventActivityFailed, `{"task_id":"task_01","error":{"code":"application_error","message":"it \"broke\"","type":"boom","non_retryable":true,"details_envelope":{"codec":"avro","blob":"wwEBAgM="}}}`},
	{EventActivityFailed, `{"task_id":"task_01","error":{"code":"cancelled","message":"the activity was cancelled","type":"cancelled","non_retryable":true}}`},
	{EventActivityFailed, `{"attempt":1,"future_id":2,"error":{"code":"module_not_found","message":"module \"x\" not found","type":"module_not_found","non_retryable":true},"failed_at":"2026-05-04T03:02:01.123Z"}`},
	{EventTimerStarted, `{"attempt":1,"future_id":4,"duration_ms":250,"fire_at":"2026-05-04T03:02:01.123Z"}`},
	{EventTimerStarted, `{"attempt":1,"future_id":4,"fire_at":"2026-05-04T03:02:01.123Z"}`},
	{EventTimerFired, `{"attempt":1,"future_id":4}`},
	{EventSignalWaiting, `{"attempt":1,"future_id":5,"name":"approve","timeout_ms":1500,"deadline":"2026-05-04T03:02:01.123Z"}`},
	{EventSignalWaiting, `{"attempt":1,"future_id":5,"name":"approve","timeout_ms":-1}`},
	{EventSignalTimedOut, `{"attempt":1,"future_id":5}`},
	{EventSignalReceived, `{"name":"approve","payload_envelope":{"codec":"avro","blob":"wwEBAgM="}}`},
	{EventSignalReceived, `{"name":"","payload_envelope":null}`},
}

// TestStoredForms checks that every stored form decodes, through the fast
// path and encoding/json alike, and that encoding what it decodes to gives
// the stored bytes back: the typed payloads read old logs and write what
// the engine always wrote.
func TestStoredForms(t *testing.T) {
	t.Parallel()
	for _, f := range storedForms {
		ev, err := Decode(f.typ, []byte(f.doc))
		require.NoError(t, err, f.doc)
		require.Equal(t, f.typ, ev.Type())
		requireSameDecode(t, f.typ, []byte(f.doc))
		d, err := Encode(ev)
		require.NoError(t, err)
		require.Equal(t, f.doc, string(d.Payload), "%s round trip", f.typ)
	}

	// What the engine writes today, built from the typed payloads.
	at := time.Date(2026, 5, 4, 3, 2, 1, 123_000_000, time.UTC)
	in := store.Payload{Codec: "avro", Data: []byte{0xc3, 0x01, 1, 2, 3}}
	none := int64(-1)
	for i, ev := range map[int]Event{
		0:  &ActivityScheduled{Attempt: 1, FutureID: 1, TaskID: "task_01", Module: "m", Function: "f", Digest: "sha256:ab", Input: in},
		3:  ActivityEnd(&store.TaskTransitionParams{ID: "task_01", To: store.StatusCompleted, Output: in}),
		5:  ActivityEnd(&store.TaskTransitionParams{ID: "task_01", To: store.StatusCancelled}),
		6:  &ActivityFailed{Attempt: 1, FutureID: 2, Error: &store.TaskError{Code: "module_not_found", Type: "module_not_found", Message: `module "x" not found`, NonRetryable: true}, FailedAt: &at},
		8:  &TimerStarted{Attempt: 1, FutureID: 4, FireAt: &at},
		11: &SignalWaiting{Attempt: 1, FutureID: 5, Name: "approve", TimeoutMS: &none},
		14: &SignalReceived{},
	} {
		d, err := Encode(ev)
		require.NoError(t, err)
		require.Equal(t, storedForms[i].typ, d.Type)
		require.Equal(t, storedForms[i].doc, string(d.Payload))
	}
	require.Nil(t, ActivityEnd(&store.TaskTransitionParams{ID: "task_01", To: store.StatusQueued}), "a retry does not end the activity")
}
