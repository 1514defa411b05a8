package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/weft-run/weft/store"
)

// wakeState tells the scheduler when waiting workflows may have fallen
// due, so that it asks the store for them only then: after an event that
// can wake one (a signal, an activity's end, start-up) and at the earliest
// wake time the store reported or a run set. It holds two words, whatever
// the number of waiting workflows: their state is in the store's rows.
type wakeState struct {
	mu   sync.Mutex
	due  bool      // an event may have woken a workflow
	next time.Time // the earliest known wake time ahead; zero: none
}

// markDue records that an event may have woken a waiting workflow.
func (s *wakeState) markDue() {
	s.mu.Lock()
	s.due = true
	s.mu.Unlock()
}

// armAt records a wake time and arms the scheduler's timer for it when it
// is earlier than the one armed.
func (s *wakeState) armAt(e *Engine, at time.Time) {
	s.mu.Lock()
	earlier := s.next.IsZero() || at.Before(s.next)
	if earlier {
		s.next = at
	}
	s.mu.Unlock()
	if earlier {
		e.sched.wakeAt(at)
	}
}

// take reports whether workflows may be due at now, and clears what made
// them so.
func (s *wakeState) take(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.due || (!s.next.IsZero() && !s.next.After(now)) {
		s.due = false
		s.next = time.Time{}
		return true
	}
	return false
}

// claim claims work for n idle workers: first the waiting workflows that
// fell due or were woken, which continue running, then queued tasks.
func (e *Engine) claim(ctx context.Context, n int) ([]workItem, error) {
	var items []workItem
	now := e.now()
	if e.wf.take(now) {
		start := time.Now()
		// Woken workflows are held to the client ceiling and the memory
		// budget (their activities run on the same worker), not to the
		// fair share of queued tasks.
		gate := e.adm.Gate()
		res, err := e.store.WorkflowClaim(ctx, &store.WorkflowClaimParams{
			Limit: n, Now: now, Gate: gate, Host: e.cfg.Host, LeaseTTL: e.cfg.LeaseTTL,
		})
		e.metrics.observeWrite("workflow_claim", time.Since(start))
		if err != nil {
			gate.Abort()
			e.wf.markDue()
			e.healer.claimed(err)
			return nil, err
		}
		for _, t := range res.Tasks {
			items = append(items, workItem{task: t, resumed: true, fresh: true})
		}
		if len(res.Tasks) == n || res.Refused {
			e.wf.markDue() // more may be due, or kept waiting for a worker
		}
		if !res.NextWakeAt.IsZero() {
			e.wf.armAt(e, res.NextWakeAt)
		}
	}
	if len(items) == n {
		return items, nil
	}
	start := time.Now()
	gate := e.adm.Gate()
	tasks, err := e.store.TaskClaim(ctx, &store.TaskClaimParams{
		Limit: n - len(items), Now: now, Gate: gate, Host: e.cfg.Host, LeaseTTL: e.cfg.LeaseTTL,
	})
	e.metrics.observeWrite("task_claim", time.Since(start))
	e.healer.claimed(err)
	if err != nil {
		gate.Abort()
		if len(items) > 0 {
			e.log.Error("claim tasks", "error", err)
			return items, nil
		}
		return nil, err
	}
	for _, t := range tasks {
		items = append(items, workItem{task: t})
	}
	return items, nil
}
