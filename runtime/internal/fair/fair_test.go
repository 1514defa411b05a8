package fair

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testAdmission is the admission of workers workers whose ceiling keeps
// one in reserve (as runtime.DefaultClientWorkers(8) does) and whose
// default task limit is 64 MiB.
func testAdmission(workers int, budget int64) *Admission {
	return New(Config{Workers: workers, ClientWorkers: workers - max(1, workers/8), MemoryBudget: budget, DefaultMemoryLimit: 64 << 20})
}

// A client alone takes workers up to the ceiling, never the reserve.
func TestAdmissionCeiling(t *testing.T) {
	a := testAdmission(8, 1<<40)
	g := a.Gate()
	g.Queued([]string{"a"})
	taken := 0
	for g.Admit("a", 0) {
		taken++
		require.LessOrEqual(t, taken, 8)
	}
	require.Equal(t, 7, taken)
	// A newcomer finds the reserved worker.
	_, ok := a.TryStart("b", 0)
	require.True(t, ok)
}

// While another client has queued work, a client at its fair share takes no
// more; the one below its share does.
func TestAdmissionFairShare(t *testing.T) {
	a := testAdmission(8, 1<<40)
	g := a.Gate()
	g.Queued([]string{"a"})
	for range 6 {
		require.True(t, g.Admit("a", 0))
	}
	g = a.Gate()
	g.Queued([]string{"a", "b"})
	require.False(t, g.Admit("a", 0), "a holds 6 of 8 workers and b waits: share is 4")
	for range 2 {
		require.True(t, g.Admit("b", 0))
	}
	require.Equal(t, 6, a.running["a"])
	require.Equal(t, 2, a.running["b"])

	// A's tasks end; its share still holds it back while b waits.
	for range 3 {
		a.Release(Ticket{owner: "a", memory: 64 << 20})
	}
	g = a.Gate()
	g.Queued([]string{"a", "b"})
	require.True(t, g.Admit("b", 0))
	require.True(t, g.Admit("b", 0))
	require.False(t, g.Admit("b", 0), "b reached its share of 4 while a waits")
	require.True(t, g.Admit("a", 0), "a is below its share again")
}

// The memory limits of running tasks never pass the budget; a task that
// does not fit waits, and the release of memory lets it in.
func TestAdmissionMemoryBudget(t *testing.T) {
	var woken int
	a := New(Config{Workers: 16, ClientWorkers: 16, MemoryBudget: 256 << 20, DefaultMemoryLimit: 64 << 20, Notify: func() { woken++ }})
	g := a.Gate()
	g.Queued([]string{"a"})
	require.True(t, g.Admit("a", 128<<20))
	require.True(t, g.Admit("a", 0))
	require.False(t, g.Admit("a", 128<<20), "128 MiB more passes the 256 MiB budget")
	require.True(t, a.Fits(256<<20))
	require.False(t, a.Fits(257<<20))

	tk := a.TicketOf(&store.Task{OwnerClientID: "a", MemoryLimit: 128 << 20})
	a.Release(tk)
	require.Equal(t, 1, woken, "a release after a refusal wakes the scheduler")
	g = a.Gate()
	g.Queued([]string{"a"})
	require.True(t, g.Admit("a", 128<<20))
}

// A claim that fails uncounts what its gate admitted, and a claim that runs
// again starts over.
func TestAdmissionAbort(t *testing.T) {
	a := testAdmission(8, 1<<40)
	g := a.Gate()
	g.Queued([]string{"a"})
	require.True(t, g.Admit("a", 0))
	require.True(t, g.Admit("a", 0))
	g.Queued([]string{"a"})
	require.Equal(t, 0, a.running["a"])
	require.True(t, g.Admit("a", 0))
	g.Abort()
	require.Empty(t, a.running)
	require.Zero(t, a.memory)
}

// A hand-over moves a worker's accounting to the next task.
func TestAdmissionHand(t *testing.T) {
	a := testAdmission(8, 1<<40)
	wf := &store.Task{OwnerClientID: "a", MemoryLimit: 256 << 20}
	tk := a.Hold(wf)
	tk = a.Hand(tk, &store.Task{OwnerClientID: "a"})
	require.Equal(t, 1, a.running["a"])
	require.Equal(t, int64(64<<20), a.memory)
	a.Release(tk)
	require.Empty(t, a.running)
	require.Zero(t, a.memory)
}
