package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

func budgetServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	f := &fakeEngine{}
	cfg.Engine, cfg.Access = f, f
	cfg.Logger = testLogger(t)
	s, err := New(cfg)
	require.NoError(t, err)
	return s
}

func payloadOf(t *testing.T, v codec.Value) store.Payload {
	t.Helper()
	f, err := codec.EncodeFrame(v)
	require.NoError(t, err)
	return store.Payload{Codec: codec.CodecAvro, Data: f}
}

// The streamed task document says what json.Marshal of taskDoc says, with
// and without error details.
func TestEncodeTaskMatchesDoc(t *testing.T) {
	s := budgetServer(t, Config{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := store.Task{
		ID: "task_01JH0000000000000000000000", Module: "m", ModuleDigest: "sha256:00", Function: "f",
		Kind: store.KindActivity, Status: store.StatusFailed, OnRestart: store.OnRestartRetry,
		Input: payloadOf(t, codec.String("in")), CreatedAt: now, UpdatedAt: now, FinishedAt: now,
	}
	withDetails := base
	withDetails.Error = &store.TaskError{
		Code: "application_error", Message: "no", Type: "bad",
		Details: payloadOf(t, codec.Long(7)),
	}
	bare := base
	bare.Error = &store.TaskError{Code: "timeout", Message: "late"}
	running := base
	running.Status, running.FinishedAt = store.StatusRunning, time.Time{}
	running.Lease = store.Lease{Host: "host-a", Token: 3, ExpiresAt: now.Add(time.Minute)}
	for _, task := range []*store.Task{&base, &withDetails, &bare, &running} {
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		require.NoError(t, s.encodeTask(bw, task))
		require.NoError(t, bw.Flush())
		want, err := json.Marshal(s.taskDoc(task))
		require.NoError(t, err)
		require.JSONEq(t, string(want), buf.String())
		var doc map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
		if task == &running {
			require.Equal(t, "host-a", doc["host"], "the host holding the lease")
		} else {
			require.NotContains(t, doc, "host", "no lease, no host")
		}
	}
}

// A payload past MaxProjectionBytes keeps its envelope and loses its
// projection, with a flag saying so.
func TestProjectionOmitted(t *testing.T) {
	s := budgetServer(t, Config{MaxProjectionBytes: 64})
	task := &store.Task{
		ID: "task_01JH0000000000000000000000", Status: store.StatusCompleted,
		Input: payloadOf(t, codec.String(strings.Repeat("x", 100))), Output: payloadOf(t, codec.String("small")),
	}
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	require.NoError(t, s.encodeTask(bw, task))
	require.NoError(t, bw.Flush())
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.JSONEq(t, "null", string(doc["input"]))
	require.JSONEq(t, "true", string(doc["input_projection_omitted"]))
	require.JSONEq(t, `"small"`, string(doc["output"]))
	_, has := doc["output_projection_omitted"]
	require.False(t, has)
	var env codec.Envelope
	require.NoError(t, json.Unmarshal(doc["input_envelope"], &env))
	require.Equal(t, *envelopeOf(task.Input), env)
}

// The read gate lets reads through up to its capacity, makes the next one
// wait, and answers server_busy when no room frees in time; a read heavier
// than the gate runs alone.
func TestReadGate(t *testing.T) {
	g := newReadGate(100, 50*time.Millisecond)
	ctx := t.Context()
	done1, err := g.acquire(ctx, 60)
	require.NoError(t, err)
	_, err = g.acquire(ctx, 60)
	require.ErrorContains(t, err, string(codeServerBusy))

	released := make(chan struct{})
	go func() {
		time.Sleep(10 * time.Millisecond)
		done1()
		close(released)
	}()
	g.wait = 5 * time.Second
	done2, err := g.acquire(ctx, 60)
	require.NoError(t, err, "a release lets the waiting read in")
	<-released
	done2()
	done3, err := g.acquire(ctx, 1000)
	require.NoError(t, err, "a heavy read runs alone")
	done3()
}

// A page ends after the item that passes its byte bound.
func TestPageWriterBound(t *testing.T) {
	s := budgetServer(t, Config{MaxPageBytes: 100})
	p := s.newPage()
	item := []byte(`"` + strings.Repeat("a", 40) + `"`)
	require.True(t, p.add(item))
	require.False(t, p.add(item), "past 100 bytes")
	require.Equal(t, 2, p.n)
}

// The streamed response document says what json.Marshal of responseDoc
// says.
func TestEncodeResponseMatchesDoc(t *testing.T) {
	s := budgetServer(t, Config{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	done := &store.Response{
		ID: "resp_01JH0000000000000000000000", TaskID: "task_01JH0000000000000000000000",
		Status: store.StatusCompleted, Output: payloadOf(t, codec.String("out")), CreatedAt: now, FinishedAt: now,
	}
	failed := &store.Response{
		ID: "resp_01JH0000000000000000000001", TaskID: "task_01JH0000000000000000000001",
		Status: store.StatusFailed, Error: &store.TaskError{Code: "application_error", Message: "no", Details: payloadOf(t, codec.Bool(true))},
		CreatedAt: now,
	}
	for _, resp := range []*store.Response{done, failed} {
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		require.NoError(t, s.encodeResponse(bw, resp))
		require.NoError(t, bw.Flush())
		want, err := json.Marshal(s.responseDoc(resp))
		require.NoError(t, err)
		require.JSONEq(t, string(want), buf.String())
	}
}
