// Package workflow is what a Go plugin imports to define durable workflows:
// functions that orchestrate activities, durable timers and signals, and
// survive crashes and restarts by deterministic replay.
//
// # Replay
//
// A workflow runs from the start every time it is woken. Each call it makes
// through this package (ExecuteActivity, NewTimer, WaitSignal, Now, Random)
// is answered by the host from the task's journal when it was already made,
// and recorded when it is new. When the workflow waits (Future.Get,
// AwaitAny, AwaitAll) on something not resolved yet, the host answers
// "suspended", the call unwinds, and the workflow holds no memory until the
// host wakes it again. Workflow code must therefore be deterministic: the
// same journal must lead to the same calls in the same order. Use Now,
// Random and NewTimer, never the time or math/rand packages, goroutines or
// map iteration order to make decisions; never recover the panic this
// package uses to unwind a suspended workflow.
//
// # Example
//
//	func init() {
//		workflow.RegisterWithOptions(Deploy, workflow.RegisterOptions{Name: "deploy"})
//	}
//
//	func Deploy(ctx workflow.Context, version string) (string, error) {
//		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
//			StartToCloseTimeout: time.Minute,
//			RetryPolicy:         &workflow.RetryPolicy{MaximumAttempts: 3},
//		})
//		var out string
//		if err := workflow.ExecuteActivity(ctx, "build", version).Get(ctx, &out); err != nil {
//			return "", err
//		}
//		var ok bool
//		err := workflow.WaitSignal(ctx, "approve", 24*time.Hour).Get(ctx, &ok)
//		if errors.Is(err, workflow.ErrTimeout) || !ok {
//			return "", workflow.NewNonRetryableApplicationError("not approved", "rejected")
//		}
//		return out, nil
//	}
//
// # Continue-as-new
//
// A workflow that runs for long returns NewContinueAsNewError to end its run
// and start again, under the same workflow id, with a new input and an
// empty journal; HistoryLength and HistorySize tell when.
//
// # Queries
//
// SetQueryHandler registers a read-only view of the workflow's state, which
// clients read with GET /v1/tasks/{id}/queries/{name} or weft tasks query:
// the daemon replays the workflow in a call of its own, recording nothing,
// and calls the handler where the replay stops.
//
// The wire contract behind this package is docs/abi.md (weft ABI v1,
// "Workflow imports").
package workflow
