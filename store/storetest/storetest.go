// Package storetest is the conformance suite of store.Store: every
// behavioural rule of the contract, run against a real backend. A backend
// calls Run from its tests with a function that opens a fresh, empty store.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) store.Store {
//			return mustOpen(tb) // a real database in tb.TempDir(), closed by tb.Cleanup
//		})
//	}
//
// The helpers (MustInsertTask, MustCheckLog, …) are exported for backend
// tests such as crash tests.
package storetest

import (
	"fmt"
	"testing"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest/internal/check"
	"github.com/weft-run/weft/store/storetest/internal/workflowcases"
)

// Run runs the conformance suite. newStore must return a fresh, empty store
// and arrange for it to be closed when tb's test ends.
func Run(t *testing.T, newStore func(testing.TB) store.Store) {
	t.Helper()
	suites := []struct {
		name string
		run  func(*testing.T, func(testing.TB) store.Store)
	}{
		{"Task", testTask},
		{"TaskStart", testTaskStart},
		{"Transition", testTransition},
		{"Cancel", testCancel},
		{"CancelCompleteRace", testCancelCompleteRace},
		{"Claim", testClaim},
		{"Event", testEvent},
		{"Recover", testRecover},
		{"Lease", testLease},
		{"Retention", testRetention},
		{"Idempotency", testIdempotency},
		{"IdempotencyTask", testIdempotencyTask},
		{"Client", testClient},
		{"Pairing", testPairing},
		{"Module", testModule},
		{"Service", testService},
		{"Workflow", workflowcases.Workflow},
		{"WorkflowWait", workflowcases.Wait},
		{"WorkflowHandOff", workflowcases.HandOff},
		{"WorkflowFold", workflowcases.Fold},
		{"PayloadScan", testPayloadScan},
		{"Budget", testBudget},
		{"Progress", testProgress},
		{"Timeout", testTimeout},
		{"WorkflowID", testWorkflowID},
		{"CancelRequest", testCancelRequest},
		{"Schedule", testSchedule},
		{"Validate", testValidate},
		{"TimePrecision", testTimePrecision},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, newStore)
		})
	}
}

// Digest is a well-formed module digest for tests.
const Digest = check.Digest

// Frame returns an opaque frame for tests: the store must keep the bytes
// exactly, whatever they are.
func Frame(s string) store.Payload { return check.Frame(s) }

// MustInsertTask inserts a task with test defaults for the required fields
// that p leaves empty.
func MustInsertTask(tb testing.TB, s store.Store, p *store.TaskInsertParams) *store.Task {
	tb.Helper()
	return check.MustInsertTask(tb, s, p)
}

// MustTransition moves a task from one status to another.
func MustTransition(tb testing.TB, s store.Store, p *store.TaskTransitionParams) *store.Task {
	tb.Helper()
	return check.MustTransition(tb, s, p)
}

// MustRunning inserts a task and brings it to running through claim and
// transition, as a worker would.
func MustRunning(tb testing.TB, s store.Store, p *store.TaskInsertParams) *store.Task {
	tb.Helper()
	return check.MustRunning(tb, s, p)
}

// MustLoading moves a queued task to loading, as TaskClaim does, with a
// CAS transition so that only that task is affected.
func MustLoading(tb testing.TB, s store.Store, id string) *store.Task {
	tb.Helper()
	return check.MustLoading(tb, s, id)
}

// MustEvents returns every event of a task.
func MustEvents(tb testing.TB, s store.Store, id string) []*store.Event {
	tb.Helper()
	return check.MustEvents(tb, s, id)
}

// EventStatus returns the status an event records and whether it records
// one: the "status" field of a status event's payload.
func EventStatus(tb testing.TB, e *store.Event) (store.Status, bool) {
	tb.Helper()
	return check.EventStatus(tb, e)
}

// MustCheckLog checks the invariants of one task's log and returns the
// task (see check.MustCheckLog): sequence numbers run 0..LastSeq with no
// gap; the first event is response.created; every status event follows
// the state machine from the previous one; the task's status is the one
// its last status event records; a finished task has exactly one terminal
// event, its last, carrying the response.
func MustCheckLog(tb testing.TB, s store.Store, id string) *store.Task {
	tb.Helper()
	return check.MustCheckLog(tb, s, id)
}

// types returns the event types of a log, for compact assertions.
func types(events []*store.Event) string { return check.Types(events) }

// hash returns a distinct 32-byte value for test token and code hashes.
func hash(s string) []byte {
	b := make([]byte, 32)
	copy(b, fmt.Sprintf("%-32s", s))
	return b
}
