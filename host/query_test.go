package host_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// TestQuery answers the queries of the testkits' tally workflow (Go and
// C) through query_request: a query replays the journal, then the handler
// answers instead of the workflow; commands from a handler fail the call
// with query_command, and nothing is recorded.
func TestQuery(t *testing.T) {
	t.Parallel()
	for _, kit := range testkitModules {
		t.Run(kit.name, func(t *testing.T) {
			t.Parallel()
			testQuery(t, kit.path)
		})
	}
}

func testQuery(t *testing.T, path string) {
	h := MustNewHost(t, host.Config{Logger: testLogger(t)})
	digest := MustCompile(t, h, path)
	// A journal where two "add" signals of 5 and 7 arrived: the workflow
	// waits for the third.
	journalOf := func(t *testing.T) *journal {
		j := newJournal()
		j.commands = []string{"signal add -1ns", "signal add -1ns", "signal add -1ns"}
		j.resolve(1, host.FutureResult{Outcome: abi.OutcomeValue, Frame: MustFrame(t, codec.Long(5))})
		j.resolve(2, host.FutureResult{Outcome: abi.OutcomeValue, Frame: MustFrame(t, codec.Long(7))})
		return j
	}
	input := codec.Map(codec.Entry{Key: "signals", Value: codec.Long(3)})
	call := func(t *testing.T, j *journal, q *host.Query, timeout time.Duration) (*host.CallResult, error) {
		t.Helper()
		return h.Call(t.Context(), &host.CallRequest{
			Digest: digest, Function: "tally", Input: MustFrame(t, input), Workflow: j.replay(), Query: q, Timeout: timeout,
		})
	}
	// answer returns the projection of the answer.
	answer := func(t *testing.T, res *host.CallResult, err error) string {
		t.Helper()
		require.NoError(t, err)
		require.Equal(t, abi.StatusOK, res.Status, "error: %+v", res.Error)
		v, err := codec.DecodeFrame(res.Output)
		require.NoError(t, err)
		js, err := codec.MarshalProjection(v)
		require.NoError(t, err)
		return string(js)
	}

	t.Run("RunWithoutQuery", func(t *testing.T) {
		t.Parallel()
		j := journalOf(t)
		res, err := call(t, j, nil, 0)
		require.NoError(t, err)
		require.Equal(t, abi.StatusSuspended, res.Status, "query_request answered no query: the workflow waits")
	})

	t.Run("State", func(t *testing.T) {
		t.Parallel()
		j := journalOf(t)
		res, err := call(t, j, &host.Query{Name: "state"}, 0)
		require.JSONEq(t, `{"sum":12,"count":2}`, answer(t, res, err))
		require.Len(t, j.commands, 3, "the query recorded no command")
	})

	t.Run("StateOfACompletedWorkflow", func(t *testing.T) {
		t.Parallel()
		j := journalOf(t)
		j.resolve(3, host.FutureResult{Outcome: abi.OutcomeValue, Frame: MustFrame(t, codec.Long(30))})
		res, err := call(t, j, &host.Query{Name: "state"}, 0)
		require.JSONEq(t, `{"sum":42,"count":3}`, answer(t, res, err), "the answer replaces the workflow's own result")
	})

	t.Run("Echo", func(t *testing.T) {
		t.Parallel()
		in := codec.Map(codec.Entry{Key: "a", Value: codec.List(codec.Long(1), codec.String("x"), codec.Bytes([]byte{0, 255}))})
		res, err := call(t, journalOf(t), &host.Query{Name: "echo", Input: MustFrame(t, in)}, 0)
		require.JSONEq(t, `{"a":[1,"x",{"$type":"bytes","base64":"AP8="}]}`, answer(t, res, err))
		res, err = call(t, journalOf(t), &host.Query{Name: "echo"}, 0)
		require.Equal(t, "null", answer(t, res, err), "no input is null")
	})

	t.Run("HandlerError", func(t *testing.T) {
		t.Parallel()
		res, err := call(t, journalOf(t), &host.Query{Name: "fail"}, 0)
		require.NoError(t, err)
		require.Equal(t, abi.StatusError, res.Status)
		require.Equal(t, "refused", res.Error.Type)
		require.Equal(t, "query refused", res.Error.Message)
	})

	t.Run("UnknownQuery", func(t *testing.T) {
		t.Parallel()
		res, err := call(t, journalOf(t), &host.Query{Name: "nope"}, 0)
		require.NoError(t, err)
		require.Equal(t, abi.StatusError, res.Status)
		require.Equal(t, abi.ErrorTypeQueryNotFound, res.Error.Type)
		require.Contains(t, res.Error.Message, `"nope"`)
		require.Contains(t, res.Error.Message, "state")
	})

	for _, name := range []string{"schedule", "wait"} {
		t.Run("Command/"+name, func(t *testing.T) {
			t.Parallel()
			j := journalOf(t)
			_, err := call(t, j, &host.Query{Name: name}, 0)
			requireCode(t, err, abi.CodeQueryCommand)
			require.Len(t, j.commands, 3, "the handler's command never reached the WorkflowHost")
		})
	}

	t.Run("SpinningHandlerTimesOut", func(t *testing.T) {
		t.Parallel()
		_, err := call(t, journalOf(t), &host.Query{Name: "spin"}, 200*time.Millisecond)
		requireCode(t, err, abi.CodeTimeout)
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		_, err := call(t, journalOf(t), &host.Query{Name: "echo", Input: append(MustFrame(t, codec.Null()), 0xff)}, 0)
		requireCode(t, err, abi.CodeInvalidInput)
	})

	t.Run("NoHandlerRegistered", func(t *testing.T) {
		t.Parallel()
		// An activity registers no query handler and never asks.
		_, err := h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "echo", Query: &host.Query{Name: "state"}})
		requireCode(t, err, abi.CodeQueryNotSupported)
	})
}

// TestQueryNotSupported queries a workflow whose module never registers a
// query handler, and so never imports query_request.
func TestQueryNotSupported(t *testing.T) {
	t.Parallel()
	h := MustNewHost(t, host.Config{Logger: testLogger(t)})
	digest := MustCompile(t, h, wfkitPath)
	_, err := h.Call(t.Context(), &host.CallRequest{
		Digest: digest, Function: "greet", Input: MustFrame(t, codec.String("x")), Workflow: newJournal().replay(),
		Query: &host.Query{Name: "state"},
	})
	requireCode(t, err, abi.CodeQueryNotSupported)
}
