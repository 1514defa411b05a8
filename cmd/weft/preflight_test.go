package main

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

// preflightData writes a data directory whose store holds one good task and
// the given inputs, and closes it.
func preflightData(tb testing.TB, inputs ...store.Payload) string {
	tb.Helper()
	dir := tb.TempDir()
	db, err := sqlite.Open(tb.Context(), sqlite.Config{Path: filepath.Join(dir, sqlite.FileName)})
	require.NoError(tb, err)
	frame, err := codec.EncodeFrame(codec.Map(codec.Entry{Key: "n", Value: codec.Long(1)}))
	require.NoError(tb, err)
	storetest.MustInsertTask(tb, db, &store.TaskInsertParams{Input: store.Payload{Codec: "avro", Data: frame}})
	for _, in := range inputs {
		storetest.MustInsertTask(tb, db, &store.TaskInsertParams{Input: in})
	}
	require.NoError(tb, db.Close(tb.Context()))
	return dir
}

func runPreflightCLI(tb testing.TB, args ...string) (int, string, string) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"preflight"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestPreflightCmd(t *testing.T) {
	t.Run("Passes", func(t *testing.T) {
		dir := preflightData(t)
		code, out, errOut := runPreflightCLI(t, "--data", dir)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "preflight passed: 1 stored value(s)")
	})

	t.Run("FindingsExitOneAndChangeNothing", func(t *testing.T) {
		dir := preflightData(t,
			store.Payload{Codec: "json", Data: []byte(`{"a":1}`)},
			store.Payload{Codec: "avro", Data: []byte{0xc3, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		)
		path := filepath.Join(dir, sqlite.FileName)
		before, err := os.ReadFile(path)
		require.NoError(t, err)

		code, out, _ := runPreflightCLI(t, "--data", dir)
		require.Equal(t, 1, code)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.True(t, strings.HasPrefix(lines[0], "unsupported_payload_codec: preflight blocked: 2 stored payload(s)"), out)
		require.Regexp(t, `^  tasks\[task_[0-9A-Z]{26}\]\.input: unsupported_payload_codec: `, lines[1])
		require.Regexp(t, `^  tasks\[task_[0-9A-Z]{26}\]\.input: unsupported_payload_schema: `, lines[2])

		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(before), sha256.Sum256(after), "preflight modified the database")

		t.Setenv("WEFT_DATA", dir)
		code, _, _ = runPreflightCLI(t)
		require.Equal(t, 1, code, "WEFT_DATA names the data directory")
	})

	t.Run("NoDatabase", func(t *testing.T) {
		dir := t.TempDir()
		code, _, errOut := runPreflightCLI(t, "--data", dir)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "no weft database in "+dir)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing was created")
	})

	t.Run("Usage", func(t *testing.T) {
		code, _, _ := runPreflightCLI(t, "extra")
		require.Equal(t, 2, code)
	})
}
