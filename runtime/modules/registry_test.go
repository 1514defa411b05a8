package modules

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

func TestRegistry(t *testing.T) {
	t.Parallel()

	t.Run("DeployGetListDelete", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		ctx := t.Context()
		m, err := r.Deploy(ctx, "test", testWasm)
		require.NoError(t, err)
		require.Equal(t, 1, m.Version)
		require.Equal(t, Digest(testWasm), m.Digest)
		require.EqualValues(t, len(testWasm), m.Size)
		require.Len(t, m.Functions, 2)
		stored, err := b.files.Get(ctx, m.Digest)
		require.NoError(t, err)
		require.Equal(t, testWasm, stored)
		require.True(t, r.Loaded(m.Digest), "a deployed digest needs no load")

		again, err := r.Deploy(ctx, "test", testWasm)
		require.NoError(t, err)
		require.Equal(t, 1, again.Version, "the same bytes again are the same version")
		v2 := append(append([]byte(nil), testWasm...), " v2"...)
		m2, err := r.Deploy(ctx, "test", v2)
		require.NoError(t, err)
		require.Equal(t, 2, m2.Version)
		got, err := r.Get(ctx, "test")
		require.NoError(t, err)
		require.Equal(t, Digest(v2), got.Digest, "the cache follows a deploy")

		_, err = r.Deploy(ctx, "other", testWasm)
		require.NoError(t, err)
		list, err := r.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []string{"other", "test"}, []string{list[0].Name, list[1].Name})

		require.NoError(t, r.Delete(ctx, "test"))
		_, err = r.Get(ctx, "test")
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(err), "the cache follows a delete")
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(r.Delete(ctx, "test")))
		stored, err = b.files.Get(ctx, m2.Digest)
		require.NoError(t, err, "the file stays for the tasks pinned to it")
		require.Equal(t, v2, stored)
	})

	t.Run("GetCaches", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		ctx := t.Context()
		_, err := b.db.ModuleInsert(ctx, &store.ModuleInsertParams{
			Name: "m", Digest: Digest([]byte("one")), Size: 3, Functions: []store.Function{{Name: "f", Kind: store.KindActivity}},
		})
		require.NoError(t, err)
		first, err := r.Get(ctx, "m")
		require.NoError(t, err)
		// A version recorded behind the registry's back is not seen: Get
		// answers from its cache.
		_, err = b.db.ModuleInsert(ctx, &store.ModuleInsertParams{
			Name: "m", Digest: Digest([]byte("two")), Size: 3, Functions: []store.Function{{Name: "f", Kind: store.KindActivity}},
		})
		require.NoError(t, err)
		again, err := r.Get(ctx, "m")
		require.NoError(t, err)
		require.Same(t, first, again)
	})

	t.Run("StaleFillDropped", func(t *testing.T) {
		t.Parallel()
		var c latestCache
		c.m, c.gen = map[string]*store.Module{}, map[string]uint64{}
		gen := c.generation("m")
		c.invalidate("m") // a deploy between the read and the fill
		c.put(&store.Module{Name: "m", Version: 1}, gen)
		require.Nil(t, c.get("m"), "a read that raced with an invalidation does not fill the cache")
		c.put(&store.Module{Name: "m", Version: 2}, c.generation("m"))
		require.Equal(t, 2, c.get("m").Version)
	})

	t.Run("Function", func(t *testing.T) {
		t.Parallel()
		r, _ := setup(t)
		ctx := t.Context()
		m, err := r.Deploy(ctx, "test", testWasm)
		require.NoError(t, err)
		got, kind, err := r.Function(ctx, "test", "flow")
		require.NoError(t, err)
		require.Equal(t, m.Digest, got.Digest)
		require.Equal(t, store.KindWorkflow, kind)
		_, _, err = r.Function(ctx, "test", "nope")
		var fe *fault.Error
		require.ErrorAs(t, err, &fe)
		require.Equal(t, fault.FunctionNotFound, fe.Code)
		require.Equal(t, "function", fe.Param)
		require.Equal(t, `module "test" (version 1) exports no function "nope"`, fe.Message)
		_, _, err = r.Function(ctx, "ghost", "f")
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(err))

		digest, err := r.FunctionDigest(ctx, "test", "echo", store.KindActivity)
		require.NoError(t, err)
		require.Equal(t, m.Digest, digest)
		_, err = r.FunctionDigest(ctx, "test", "flow", store.KindActivity)
		require.Equal(t, fault.FunctionNotFound, fault.CodeOf(err))
		require.Equal(t, `flow in module "test" is a workflow, not an activity`, fault.Message(err))
		_, err = r.FunctionDigest(ctx, "ghost", "echo", store.KindActivity)
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(err))
	})
}

func TestLoad(t *testing.T) {
	t.Parallel()

	t.Run("OncePerDigest", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		digest, err := b.files.Put(t.Context(), testWasm)
		require.NoError(t, err)
		require.False(t, r.Loaded(digest))
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { require.NoError(t, r.Load(t.Context(), digest)) })
		}
		wg.Wait()
		require.True(t, r.Loaded(digest))
		require.NoError(t, r.Load(t.Context(), digest))
		require.Equal(t, 1, b.exec.compileCount(), "concurrent loads share one compile")
	})

	t.Run("FailureTriedAgain", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		digest, err := b.files.Put(t.Context(), testWasm)
		require.NoError(t, err)
		b.exec.CompileFunc = func(context.Context, []byte) ([]store.Function, error) {
			return nil, errors.New("compiler crashed")
		}
		err = r.Load(t.Context(), digest)
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err), "a compile failure without a code is module_invalid")
		require.False(t, r.Loaded(digest))
		b.exec.CompileFunc = nil
		require.NoError(t, r.Load(t.Context(), digest), "the next load tries again")
		require.True(t, r.Loaded(digest))
		require.Equal(t, 2, b.exec.compileCount())
	})

	t.Run("MissingFile", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		digest := Digest([]byte("never stored"))
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(r.Load(t.Context(), digest)))
		_, err := r.Bytes(t.Context(), digest)
		require.Equal(t, fault.ModuleNotFound, fault.CodeOf(err))
		require.Zero(t, b.exec.compileCount())
	})

	t.Run("CorruptFile", func(t *testing.T) {
		t.Parallel()
		r, b := setup(t)
		digest, err := b.files.Put(t.Context(), testWasm)
		require.NoError(t, err)
		path, err := b.files.Path(digest)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(path, 0o600))
		require.NoError(t, os.WriteFile(path, []byte("module changed on disk!"), 0o600))
		_, err = r.Bytes(t.Context(), digest)
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(err))
		require.Equal(t, fault.ModuleInvalid, fault.CodeOf(r.Load(t.Context(), digest)))
		require.Zero(t, b.exec.compileCount(), "damaged bytes never reach the compiler")
	})
}

func TestReplayCheck(t *testing.T) {
	t.Parallel()
	r, b := setup(t)
	ctx := t.Context()
	m, err := r.Deploy(ctx, "test", testWasm)
	require.NoError(t, err)
	v2 := []byte("\x00asm\x01\x00\x00\x00 version 2")

	div, err := r.ReplayCheck(ctx, "test", v2)
	require.NoError(t, err)
	require.Empty(t, div, "no running workflow, nothing to replay")

	task := mustRunningWorkflow(t, b.db, m.Digest, "flow")
	gone := mustRunningWorkflow(t, b.db, m.Digest, "gone")
	var replayed []string
	b.exec.ReplayFunc = func(_ context.Context, tk *store.Task, digest string, wasm []byte, host journal.WorkflowHost) (bool, error) {
		replayed = append(replayed, tk.ID)
		require.Equal(t, Digest(v2), digest)
		require.Equal(t, v2, wasm)
		require.NotNil(t, host)
		return false, nil
	}
	div, err = r.ReplayCheck(ctx, "test", v2)
	require.NoError(t, err)
	require.Equal(t, []Divergence{{TaskID: gone.ID, Function: "gone", Reason: `the new version exports no workflow "gone"`}}, div)
	require.Equal(t, []string{task.ID}, replayed, "a workflow the new version does not export is not run")

	_, err = r.ReplayCheck(ctx, "test", testWasm)
	require.NoError(t, err)
	require.Len(t, replayed, 1, "workflows already on the digest are not replayed")

	b.exec.ReplayFunc = func(context.Context, *store.Task, string, []byte, journal.WorkflowHost) (bool, error) {
		return false, fault.Errorf(fault.Trap, "unreachable executed")
	}
	_, err = r.DeployCheckReplay(ctx, "test", v2)
	require.Equal(t, fault.ReplayDivergence, fault.CodeOf(err))
	require.Contains(t, fault.Message(err), task.ID+` (flow): the new version failed: trap: unreachable executed`)
	require.Contains(t, fault.Message(err), gone.ID+" (gone)")
	got, err := r.Get(ctx, "test")
	require.NoError(t, err)
	require.Equal(t, 1, got.Version, "nothing was deployed")
}
