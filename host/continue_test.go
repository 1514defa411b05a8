package host_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/host"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// TestContinueAsNew runs the testkits' chain workflow (Go and C) over a
// journal where its activity returned: the call ends with ContinueAsNew
// and the next run's input, or, on the last run, with its result and its
// history length; a query of the same run answers instead and does not
// continue.
func TestContinueAsNew(t *testing.T) {
	t.Parallel()
	for _, kit := range testkitModules {
		t.Run(kit.name, func(t *testing.T) {
			t.Parallel()
			h := MustNewHost(t, host.Config{Logger: testLogger(t)})
			digest := MustCompile(t, h, kit.path)
			call := func(t *testing.T, runs, done int64, q *host.Query) (*host.CallResult, error) {
				j := newJournal()
				j.commands = []string{"activity /echo " + itoaJSON(done)}
				j.resolve(1, host.FutureResult{Outcome: abi.OutcomeValue, Frame: MustFrame(t, codec.Long(done))})
				in := codec.Map(codec.Entry{Key: "runs", Value: codec.Long(runs)}, codec.Entry{Key: "done", Value: codec.Long(done)})
				return h.Call(t.Context(), &host.CallRequest{Digest: digest, Function: "chain", Input: MustFrame(t, in), Workflow: j.replay(), Query: q})
			}
			projection := func(t *testing.T, frame []byte) string {
				v, err := codec.DecodeFrame(frame)
				require.NoError(t, err)
				js, err := codec.MarshalProjection(v)
				require.NoError(t, err)
				return string(js)
			}

			res, err := call(t, 3, 1, nil)
			require.NoError(t, err)
			require.Equal(t, abi.StatusOK, res.Status)
			require.True(t, res.ContinueAsNew)
			require.JSONEq(t, `{"runs":3,"done":2}`, projection(t, res.Output), "the next run's input")

			res, err = call(t, 3, 2, nil)
			require.NoError(t, err)
			require.False(t, res.ContinueAsNew, "the last run returns")
			require.JSONEq(t, `{"runs":3,"history_length":2}`, projection(t, res.Output), "one command and one result read")

			res, err = call(t, 3, 1, &host.Query{Name: "done"})
			require.NoError(t, err)
			require.False(t, res.ContinueAsNew, "a query answers and never continues")
			require.Equal(t, "1", projection(t, res.Output))

			res, err = call(t, 3, 2, nil)
			require.NoError(t, err)
			require.False(t, res.ContinueAsNew, "nothing of the query's call stays in the instance")
		})
	}
}

func itoaJSON(n int64) string {
	js, _ := codec.MarshalProjection(codec.Long(n))
	return string(js)
}
