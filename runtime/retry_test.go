package runtime

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/retry"
	"github.com/weft-run/weft/store"
)

func TestRetry(t *testing.T) {
	t.Parallel()
	fast := func(attempts int) *store.RetryPolicy {
		return &store.RetryPolicy{InitialInterval: 20 * time.Millisecond, BackoffCoefficient: 2, MaximumAttempts: attempts}
	}

	t.Run("RetriesWithBackoffThenCompletes", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			if n.Add(1) < 3 {
				return &CallResult{Error: &PluginError{Type: "Flaky", Message: "not yet"}}, nil
			}
			return echo(ctx, call)
		}, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work", Retry: fast(5)})
		evs := mustEvents(t, e, b.admin, task.ID, -1)
		requireGapless(t, evs, 0)
		done, err := e.TaskGet(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, done.Status)
		require.Equal(t, 3, done.Attempt)

		var failed []attemptFailed
		var failedAt []time.Time
		var claimedAt []time.Time
		for _, ev := range evs {
			switch ev.Type {
			case EventAttemptFailed:
				var af attemptFailed
				require.NoError(t, json.Unmarshal(ev.Payload, &af))
				failed = append(failed, af)
				failedAt = append(failedAt, ev.CreatedAt)
			case store.EventStatusChanged:
				var se store.StatusEvent
				require.NoError(t, json.Unmarshal(ev.Payload, &se))
				if se.Status == store.StatusLoading {
					claimedAt = append(claimedAt, ev.CreatedAt)
				}
			}
		}
		require.Len(t, failed, 2)
		require.Len(t, claimedAt, 3)
		for i, af := range failed {
			require.Equal(t, i+1, af.Attempt)
			require.Equal(t, string(fault.Application), af.Error.Code)
			require.Equal(t, "Flaky", af.Error.Type)
			// The retry was scheduled by the backoff (20 ms, then 40 ms, each
			// −20% jitter) after the failed attempt started, and the next
			// attempt waited for it (event times are milliseconds).
			wait := time.Duration(float64(20*time.Millisecond<<i) * (1 - retry.Jitter))
			require.GreaterOrEqual(t, af.RetryAt.Sub(claimedAt[i]), wait, "attempt %d", i+2)
			require.False(t, claimedAt[i+1].Before(af.RetryAt.Truncate(time.Millisecond)), "attempt %d started early", i+2)
			require.False(t, failedAt[i].After(claimedAt[i+1]))
		}
	})

	t.Run("GivesUpAfterMaximumAttempts", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, func(context.Context, *Call) (*CallResult, error) {
			return nil, &fault.Error{Code: fault.Trap, Message: "unreachable executed"}
		}, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work", Retry: fast(3)})
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, 3, done.Attempt)
		require.Equal(t, string(fault.Trap), done.Error.Code)
		require.Equal(t, "unreachable executed", done.Error.Message)
		require.Equal(t, 3, b.exec.callCount())
	})

	t.Run("NoPolicyMeansTheDefaultPolicy", func(t *testing.T) {
		t.Parallel()
		def := store.RetryPolicy{InitialInterval: time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 4}
		e, b := setup(t, func(context.Context, *Call) (*CallResult, error) {
			return &CallResult{Error: &PluginError{Type: "Flaky", Message: "no"}}, nil
		}, func(c *Config) { c.DefaultRetry = &def })
		task := mustCreate(t, e, TaskCreateParams{Function: "work"})
		require.Equal(t, def, task.Retry, "the task shows the policy it runs under")
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, 4, done.Attempt)
		require.Equal(t, 4, b.exec.callCount())

		// A policy of its own replaces the default: maximum_attempts 0 or
		// 1 means one attempt.
		before := b.exec.callCount()
		done = mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "work", Retry: &store.RetryPolicy{}}).ID)
		require.Equal(t, 1, done.Attempt)
		require.Equal(t, before+1, b.exec.callCount())
	})

	t.Run("BuiltInDefault", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, echo, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work"})
		require.Equal(t, DefaultActivityRetry, task.Retry)
		require.Equal(t, 3, task.Retry.MaximumAttempts)
		require.Equal(t, store.OnRestartRetry, task.OnRestart)

		// A workflow runs once unless it names a policy, and resumes from
		// its journal after a restart.
		flow := mustCreate(t, e, TaskCreateParams{Function: "flow"})
		require.Equal(t, store.RetryPolicy{}, flow.Retry)
		require.Equal(t, store.OnRestartResume, flow.OnRestart)
		_, err := e.TaskCancel(t.Context(), b.admin, flow.ID)
		require.NoError(t, err)
	})

	t.Run("NonRetryable", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name   string
			result *CallResult
			err    error
			policy *store.RetryPolicy
			code   string
		}{
			{name: "flagged by the plugin", result: &CallResult{Error: &PluginError{Type: "Invalid", Message: "bad order", NonRetryable: true}}, policy: fast(5), code: string(fault.Application)},
			{
				name: "type listed by the policy", result: &CallResult{Error: &PluginError{Type: "Declined", Message: "card declined"}},
				policy: &store.RetryPolicy{InitialInterval: 20 * time.Millisecond, MaximumAttempts: 5, NonRetryableErrorTypes: []string{"Declined"}}, code: string(fault.Application),
			},
			{
				name: "host code listed by the policy", err: &fault.Error{Code: fault.MemoryLimit, Message: "out of memory"},
				policy: &store.RetryPolicy{InitialInterval: 20 * time.Millisecond, MaximumAttempts: 5, NonRetryableErrorTypes: []string{"memory_limit"}}, code: string(fault.MemoryLimit),
			},
			{name: "function missing", err: &fault.Error{Code: fault.FunctionNotFound, Message: "no export"}, policy: fast(5), code: string(fault.FunctionNotFound)},
			{name: "bad output frame", result: &CallResult{Output: []byte(`{"json":true}`)}, policy: fast(5), code: "unsupported_payload_codec"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e, b := setup(t, func(context.Context, *Call) (*CallResult, error) { return tc.result, tc.err }, nil)
				done := mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "work", Retry: tc.policy}).ID)
				require.Equal(t, store.StatusFailed, done.Status)
				require.Equal(t, 1, done.Attempt)
				require.Equal(t, tc.code, done.Error.Code)
				require.Equal(t, 1, b.exec.callCount())
			})
		}
	})

	t.Run("ApplicationErrorIsStored", func(t *testing.T) {
		t.Parallel()
		details := mustFrame(t, codec.String("order 7"))
		e, _ := setup(t, func(context.Context, *Call) (*CallResult, error) {
			return &CallResult{Error: &PluginError{Type: "Declined", Message: "card declined", NonRetryable: true, Details: details}}, nil
		}, nil)
		done := mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "work"}).ID)
		require.Equal(t, &store.TaskError{
			Code: string(fault.Application), Message: "card declined", Type: "Declined", NonRetryable: true,
			Details: store.Payload{Codec: "avro", Data: details},
		}, done.Error)
	})
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	// sleepy honours its context like a real plugin call and reports the
	// deadline the way the host does.
	sleepy := func(ctx context.Context, _ *Call) (*CallResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}

	t.Run("PerAttempt", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, sleepy, nil)
		task := mustCreate(t, e, TaskCreateParams{
			Function: "work", TimeoutMS: 30,
			Retry: &store.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 2},
		})
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.Timeout), done.Error.Code)
		require.Equal(t, 2, done.Attempt, "an attempt timeout is retried")
		require.Equal(t, 2, b.exec.callCount())
	})

	t.Run("CallSeesItsDeadline", func(t *testing.T) {
		t.Parallel()
		type seen struct {
			timeout, left time.Duration
			ok            bool
		}
		got := make(chan seen, 1)
		e, _ := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			dl, ok := ctx.Deadline()
			got <- seen{timeout: call.Timeout, left: time.Until(dl), ok: ok}
			return echo(ctx, call)
		}, nil)
		mustFinish(t, e, mustCreate(t, e, TaskCreateParams{Function: "work", TimeoutMS: 5000}).ID)
		s := <-got
		require.True(t, s.ok)
		require.Equal(t, 5*time.Second, s.timeout)
		require.InDelta(t, float64(s.timeout), float64(s.left), float64(time.Second))
	})
}

func TestTotalTimeout(t *testing.T) {
	t.Parallel()
	sleepy := func(ctx context.Context, _ *Call) (*CallResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}

	t.Run("EndsTheOnlyAttempt", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, sleepy, nil)
		task := mustCreate(t, e, TaskCreateParams{
			Function: "work",
			Retry:    &store.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaximumAttempts: 5, TotalTimeout: 100 * time.Millisecond},
		})
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.Timeout), done.Error.Code)
		require.True(t, done.Error.NonRetryable)
		require.Equal(t, 1, done.Attempt, "no time is left for a retry")
		require.Equal(t, 1, b.exec.callCount())
		require.GreaterOrEqual(t, done.FinishedAt.Sub(done.CreatedAt), 90*time.Millisecond)
	})

	t.Run("BoundsTheRetries", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, sleepy, nil)
		task := mustCreate(t, e, TaskCreateParams{
			Function: "work", TimeoutMS: 30,
			Retry: &store.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 2, MaximumAttempts: 50, TotalTimeout: 150 * time.Millisecond},
		})
		done := mustFinish(t, e, task.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.Timeout), done.Error.Code)
		require.Less(t, done.Attempt, 50)
		// The last claim may come after the deadline, which then ends the
		// task before its call.
		require.GreaterOrEqual(t, b.exec.callCount(), done.Attempt-1)
		require.LessOrEqual(t, b.exec.callCount(), done.Attempt)
	})

	t.Run("ExpiredBeforeItsAttempt", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		entered := make(chan struct{}, 1)
		e, b := setup(t, func(ctx context.Context, call *Call) (*CallResult, error) {
			entered <- struct{}{}
			<-release
			return echo(ctx, call)
		}, func(c *Config) { c.Workers = 1 })
		blocker := mustCreate(t, e, TaskCreateParams{Function: "work"})
		<-entered
		late := mustCreate(t, e, TaskCreateParams{Function: "work", Retry: &store.RetryPolicy{TotalTimeout: 20 * time.Millisecond}})
		time.Sleep(40 * time.Millisecond)
		close(release)
		mustFinish(t, e, blocker.ID)
		done := mustFinish(t, e, late.ID)
		require.Equal(t, store.StatusFailed, done.Status)
		require.Equal(t, string(fault.Timeout), done.Error.Code)
		require.Equal(t, 1, b.exec.callCount(), "the late task never ran")
	})

	t.Run("Validated", func(t *testing.T) {
		t.Parallel()
		e, _ := setup(t, sleepy, nil)
		_, err := e.TaskCreate(t.Context(), &TaskCreateParams{Module: "test", Function: "work", Retry: &store.RetryPolicy{TotalTimeout: -1}})
		require.Equal(t, fault.Invalid, fault.CodeOf(err))
		require.Equal(t, "retry.total_timeout_ms", fault.Param(err))
	})

	t.Run("Persisted", func(t *testing.T) {
		t.Parallel()
		e, b := setup(t, sleepy, nil)
		task := mustCreate(t, e, TaskCreateParams{Function: "work", Retry: &store.RetryPolicy{TotalTimeout: time.Hour}})
		got, err := b.db.TaskGet(t.Context(), task.ID)
		require.NoError(t, err)
		require.Equal(t, time.Hour, got.Retry.TotalTimeout)
		_, err = e.TaskCancel(t.Context(), b.admin, task.ID)
		require.NoError(t, err)
	})
}
