package preflight_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/preflight"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

// mustFrame encodes s as an Avro Value v1 frame.
func mustFrame(tb testing.TB, s string) []byte {
	tb.Helper()
	f, err := codec.EncodeFrame(codec.String(s))
	require.NoError(tb, err)
	return f
}

func avro(tb testing.TB, s string) store.Payload {
	return store.Payload{Codec: "avro", Data: mustFrame(tb, s)}
}

// envelopeJSON is the {codec, blob} envelope of frame.
func envelopeJSON(codecTag string, frame []byte) string {
	return fmt.Sprintf(`{"codec":%q,"blob":%q}`, codecTag, base64.StdEncoding.EncodeToString(frame))
}

// fixture is a data directory with a store the test writes through, then
// closes so that preflight opens it read-only, as weft preflight does.
type fixture struct {
	path string
	db   *sqlite.DB
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), sqlite.FileName)
	db, err := sqlite.Open(tb.Context(), sqlite.Config{Path: path})
	require.NoError(tb, err)
	return &fixture{path: path, db: db}
}

// run closes the writer, runs the preflight on a read-only store and
// checks the file did not change.
func (f *fixture) run(tb testing.TB, cfg preflight.Config) *preflight.Report {
	tb.Helper()
	require.NoError(tb, f.db.Close(tb.Context()))
	before := fileSum(tb, f.path)
	ro, err := sqlite.Open(tb.Context(), sqlite.Config{Path: f.path, ReadOnly: true})
	require.NoError(tb, err)
	rep, err := preflight.Run(tb.Context(), ro, cfg)
	require.NoError(tb, err)
	require.NoError(tb, ro.Close(tb.Context()))
	require.Equal(tb, before, fileSum(tb, f.path), "preflight changed the database file")
	return rep
}

func fileSum(tb testing.TB, path string) [32]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	return sha256.Sum256(b)
}

func complete(tb testing.TB, s store.Store, p *store.TaskInsertParams, out store.Payload) *store.Task {
	tb.Helper()
	t := storetest.MustRunning(tb, s, p)
	return storetest.MustTransition(tb, s, &store.TaskTransitionParams{
		ID: t.ID, From: []store.Status{store.StatusRunning},
		To: store.StatusCompleted, Output: out,
	})
}

func TestRun(t *testing.T) {
	t.Run("Clean", func(t *testing.T) {
		f := newFixture(t)
		ctx := t.Context()
		storetest.MustInsertTask(t, f.db, &store.TaskInsertParams{Input: avro(t, "queued")})
		running := storetest.MustRunning(t, f.db, &store.TaskInsertParams{Input: avro(t, "running")})
		_, err := f.db.TaskCheckpoint(ctx, &store.TaskCheckpointParams{
			ID: running.ID, Checkpoint: avro(t, "cp"),
			Events: []store.EventDraft{{Type: "activity.completed", Payload: json.RawMessage(
				`{"step":1,"result":{"codec":"json","blob":"customer data"},"result_envelope":` + envelopeJSON("avro", mustFrame(t, "r")) + `}`)}},
		})
		require.NoError(t, err)
		complete(t, f.db, &store.TaskInsertParams{Input: avro(t, "in")}, avro(t, "out"))
		rep := f.run(t, preflight.Config{})
		require.True(t, rep.OK(), "%v", rep.Findings)
		require.NoError(t, rep.Err())
		require.Equal(t, 5, rep.Values) // 3 inputs, a checkpoint, an output
		require.Equal(t, 2, rep.Envelopes, "the journal result and the terminal event's output")
		require.Equal(t, 9, rep.Documents, "every event")
		var out strings.Builder
		require.NoError(t, rep.WriteText(&out))
		require.Equal(t, "preflight passed: 5 stored value(s) and 2 envelope(s) in 9 document(s) are Avro Value v1 frames\n", out.String())
	})

	t.Run("Findings", func(t *testing.T) {
		f := newFixture(t)
		ctx := t.Context()
		good := mustFrame(t, "ok")
		badPrint := append([]byte{}, good...)
		badPrint[5] ^= 0xff
		truncated := good[:len(good)-1]

		jsonTagged := storetest.MustInsertTask(t, f.db, &store.TaskInsertParams{Input: store.Payload{Codec: "json", Data: []byte(`{"a":1}`)}})
		otherSchema := storetest.MustInsertTask(t, f.db, &store.TaskInsertParams{Input: store.Payload{Codec: "avro", Data: badPrint}})
		untagged := storetest.MustInsertTask(t, f.db, &store.TaskInsertParams{Input: store.Payload{Data: good}})
		running := storetest.MustRunning(t, f.db, &store.TaskInsertParams{Input: avro(t, "in")})
		_, err := f.db.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: running.ID, Checkpoint: store.Payload{Codec: "avro", Data: truncated}})
		require.NoError(t, err)
		_, err = f.db.EventAppend(ctx, &store.EventAppendParams{TaskID: running.ID, Events: []store.EventDraft{{
			Type: "activity.completed",
			Payload: json.RawMessage(`{"result_envelope":{"codec":"avro","blob":"not base64!"},` +
				`"output":{"codec":"json","blob":"e30="},"output_envelope":` + envelopeJSON("avro", good) + `,` +
				`"steps":[{"value_envelope":` + envelopeJSON("json", []byte(`{}`)) + `},{"value_envelope":null}],` +
				`"odd_envelope":5}`),
		}}})
		require.NoError(t, err)
		jsonBytes := complete(t, f.db, &store.TaskInsertParams{Input: avro(t, "in")}, store.Payload{Codec: "avro", Data: []byte(`{"raw":"json"}`)})
		_, err = f.db.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{
			ClientID: "cli_a", Key: "k1",
			RequestDigest: []byte("r"), ExpiresAt: time.Now().Add(time.Hour),
		})
		require.NoError(t, err)
		require.NoError(t, f.db.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{
			ClientID: "cli_a", Key: "k1", StatusCode: 202,
			Body: []byte(`{"id":"task_x","input":"x","input_envelope":` + envelopeJSON("avro", badPrint) + `}`),
		}))

		rep := f.run(t, preflight.Config{})
		require.False(t, rep.OK())
		type row struct{ loc, code string }
		var got []row
		for _, fd := range rep.Findings {
			require.NotEmpty(t, fd.Diagnostic)
			got = append(got, row{fd.Location(), string(fd.Code)})
		}
		require.Equal(t, []row{
			{"tasks[" + jsonTagged.ID + "].input", "unsupported_payload_codec"},
			{"tasks[" + otherSchema.ID + "].input", "unsupported_payload_schema"},
			{"tasks[" + untagged.ID + "].input", "unsupported_payload_codec"},
			{"tasks[" + running.ID + "].checkpoint", "invalid_payload_framing"},
			{"tasks[" + jsonBytes.ID + "].output", "unsupported_payload_codec"},
			{"task_events[" + running.ID + "#3].payload $.odd_envelope", "invalid_payload_envelope"},
			{"task_events[" + running.ID + "#3].payload $.result_envelope", "invalid_payload_framing"},
			{"task_events[" + running.ID + "#3].payload $.steps[0].value_envelope", "unsupported_payload_codec"},
			{"task_events[" + jsonBytes.ID + "#3].payload $.output_envelope", "unsupported_payload_codec"},
			{"idempotency_keys[cli_a/k1].body $.input_envelope", "unsupported_payload_schema"},
		}, got)
		require.Equal(t, 10, rep.Total)
		require.ErrorIs(t, rep.Err(), preflight.ErrBlocked)

		var out strings.Builder
		require.NoError(t, rep.WriteText(&out))
		text := out.String()
		require.True(t, strings.HasPrefix(text, "unsupported_payload_codec: preflight blocked: 10 stored payload(s)"), text)
		require.Contains(t, text, "  tasks["+otherSchema.ID+"].input: unsupported_payload_schema: ")
		require.Contains(t, text, "Nothing was changed")
		require.NotContains(t, text, "more")
	})

	t.Run("AtMost50", func(t *testing.T) {
		f := newFixture(t)
		for range 60 {
			storetest.MustInsertTask(t, f.db, &store.TaskInsertParams{Input: store.Payload{Codec: "json", Data: []byte(`1`)}})
		}
		rep := f.run(t, preflight.Config{})
		require.Len(t, rep.Findings, 50)
		require.Equal(t, 60, rep.Total)
		var out strings.Builder
		require.NoError(t, rep.WriteText(&out))
		require.Contains(t, out.String(), "… and 10 more")
		require.Equal(t, 50, strings.Count(out.String(), ": unsupported_payload_codec: "))
	})
}
