package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/weft-run/weft/runtime/internal/leases"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// errLeaseLost is the cancellation cause of a call whose task's lease this
// host no longer holds: another host took the task over, or the lease ran
// out without a renewal. Its worker writes nothing more for the task.
var errLeaseLost = errors.New("task lease lost")

// StaleKeysAfter is the age past which a host of a shared store takes an
// in-flight idempotency key bound to no task for one whose request died
// with its host, and releases it (store.TaskReclaimParams.StaleKeysAfter).
// A key is bound to its task by the insert that creates the task, so the
// longest unbound stretch of a live request is that of one create or
// signal call: ten minutes is far above it.
const StaleKeysAfter = 10 * time.Minute

// reclaimLimit caps the tasks one TaskReclaim takes over.
const reclaimLimit = 100

// leaseLost handles a write of task id refused with store.ErrLeaseLost,
// or a lease the heartbeat found lost: the call is stopped, nothing more
// is written for the task, and one warning says so.
func (e *Engine) leaseLost(k leases.Key, why string) {
	if k.ID == "" {
		return
	}
	if e.leases.Lose(k, errLeaseLost) {
		e.log.Warn("task lease lost; the call stops and writes nothing more", "task_id", k.ID,
			"token", k.Token, "host", e.cfg.Host, "why", why)
	}
}

// heartbeatEvery returns the heartbeat period: a third of the lease.
func (e *Engine) heartbeatEvery() time.Duration { return max(e.cfg.LeaseTTL/3, time.Millisecond) }

// heartbeat renews every lease this host holds, in one LeaseExtend, each
// third of the lease; it stops the calls whose lease the store reports
// lost, and those reported cancelling (a cancel another host accepted). A
// renewal the store refuses is tried again with backoff; on a shared
// store, a lease whose expiry passes without a renewal is taken as lost,
// since another host may have taken the task over.
func (e *Engine) heartbeat(ctx context.Context) {
	defer e.wg.Done()
	every := e.heartbeatEvery()
	retry := e.cfg.StoreRetry
	backoff := time.Duration(0)
	failures := 0
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		if h := e.hookHeartbeat; h != nil && !h() {
			timer.Reset(every)
			continue
		}
		err := e.renewLeases(ctx)
		switch {
		case err == nil:
			if failures > 0 {
				e.log.Info("lease renewal: the store accepts renewals again", "failures", failures)
			}
			failures, backoff = 0, 0
			timer.Reset(every)
		case ctx.Err() != nil:
			return
		default:
			failures++
			if failures&(failures-1) == 0 {
				e.log.Error("lease renewal: the store refused; trying again with backoff", "error", err, "failures", failures)
			}
			backoff = min(max(2*backoff, retry.MinBackoff), retry.MaxBackoff, every)
			timer.Reset(backoff)
		}
	}
}

// renewLeases is one heartbeat.
func (e *Engine) renewLeases(ctx context.Context) error {
	now := time.Now()
	held, expired := e.leases.Snapshot(now)
	if e.store.Shared() {
		for _, k := range expired {
			e.leaseLost(k, "the lease ran out without a renewal")
		}
	}
	if len(held) == 0 {
		return nil
	}
	// A renewal that hangs (a database out of reach) counts as refused
	// after a heartbeat period, so the expiry check above keeps running.
	ctx, cancel := context.WithTimeout(ctx, e.heartbeatEvery())
	defer cancel()
	start := time.Now()
	res, err := e.store.LeaseExtend(ctx, &store.LeaseExtendParams{Host: e.cfg.Host, TTL: e.cfg.LeaseTTL, Held: held})
	e.metrics.ObserveWrite("lease_extend", time.Since(start))
	if err != nil {
		return err
	}
	e.leases.Renewed(held, res.Lost, start.Add(e.cfg.LeaseTTL))
	lost := make(map[string]bool, len(res.Lost))
	for _, id := range res.Lost {
		lost[id] = true
	}
	for _, l := range held {
		if lost[l.TaskID] {
			e.leaseLost(leases.Key{ID: l.TaskID, Token: l.Token}, "the store no longer holds it for this host")
		}
	}
	for _, id := range res.Cancelling {
		e.running.cancel(id, errCancelRequested)
	}
	return nil
}

// reclaimLoop, on a shared store, takes over the tasks of hosts that
// stopped renewing their leases, every quarter of the lease: a dead host's
// tasks are taken over within the lease and one period.
func (e *Engine) reclaimLoop(ctx context.Context) {
	defer e.wg.Done()
	every := max(e.cfg.LeaseTTL/4, time.Millisecond)
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		if h := e.hookHeartbeat; e.draining.Load() || (h != nil && !h()) {
			timer.Reset(every)
			continue
		}
		resumed, err := e.reclaim(ctx, false)
		if err != nil && ctx.Err() == nil {
			e.log.Error("reclaim tasks of expired leases", "error", err)
		}
		if len(resumed) > 0 {
			e.wg.Add(1)
			go e.resume(ctx, resumed)
		}
		timer.Reset(every)
	}
}

// reclaim takes over the tasks whose lease expired, batch by batch, and
// returns the activities to continue from their checkpoint (policy
// resume); a resumed workflow is made claimable, to run again from its
// journal on whichever host claims it. With restart (at Open) it also
// takes back the tasks whose lease this host's id holds: they are left
// over from an earlier run of this host.
func (e *Engine) reclaim(ctx context.Context, restart bool) ([]*store.Task, error) {
	var resumed []*store.Task
	for {
		start := time.Now()
		res, err := e.store.TaskReclaim(ctx, &store.TaskReclaimParams{
			Host: e.cfg.Host, LeaseTTL: e.cfg.LeaseTTL, Limit: reclaimLimit, StaleKeysAfter: StaleKeysAfter,
			Restart: restart,
		})
		e.metrics.ObserveWrite("task_reclaim", time.Since(start))
		if err != nil {
			return resumed, err
		}
		n := len(res.Failed) + len(res.Requeued) + len(res.Cancelled) + len(res.Resumed)
		if n > 0 || res.IdempotencyKeysReleased > 0 {
			e.log.Info("took over tasks of expired leases", "failed", len(res.Failed), "requeued", len(res.Requeued),
				"resumed", len(res.Resumed), "cancelled", len(res.Cancelled),
				"idempotency_keys_released", res.IdempotencyKeysReleased)
		}
		e.endReclaimedChildren(ctx, res.Failed)
		e.endReclaimedChildren(ctx, res.Cancelled)
		var workflows []string
		for _, t := range res.Resumed {
			if t.Kind == store.KindWorkflow {
				workflows = append(workflows, t.ID)
				continue
			}
			resumed = append(resumed, t)
		}
		if len(workflows) > 0 {
			for _, id := range workflows {
				e.jcache.Drop(id)
			}
			if err := e.store.WorkflowResume(ctx, &store.WorkflowResumeParams{IDs: workflows}); err != nil {
				return resumed, err
			}
			e.wf.markDue()
		}
		if len(res.Requeued) > 0 || len(workflows) > 0 {
			e.sched.notify()
		}
		if n < reclaimLimit {
			return resumed, nil
		}
	}
}

// endReclaimedChildren hands the end of each activity of ids that a
// takeover failed or cancelled to the workflow that scheduled it, as the
// activity's worker would have: the workflow's journal event, appended
// with a wake, so that a workflow waiting on another host for the
// activity goes on. The takeover's own transaction cannot write it (the
// store knows nothing of journals); a workflow finished meanwhile is left
// alone, and so are tasks that are no activity of a workflow.
func (e *Engine) endReclaimedChildren(ctx context.Context, ids []string) {
	for _, id := range ids {
		t, err := e.store.TaskGet(ctx, id)
		if err != nil {
			e.log.Error("taken-over activity: read it to tell its workflow", "task_id", id, "error", err)
			continue
		}
		if t.ParentTaskID == "" || !t.Status.IsTerminal() {
			continue
		}
		ev := journal.ActivityEnd(&store.TaskTransitionParams{ID: t.ID, To: t.Status, Output: t.Output, Error: t.Error})
		if ev == nil {
			continue
		}
		d, err := journal.Encode(ev)
		if err != nil {
			e.log.Error("taken-over activity: outcome event", "task_id", id, "error", err)
			continue
		}
		_, err = e.store.EventAppend(ctx, &store.EventAppendParams{TaskID: t.ParentTaskID, Events: []store.EventDraft{d}, Wake: true})
		if err != nil && !errors.Is(err, store.ErrTaskFinished) {
			e.log.Error("taken-over activity: tell its workflow", "task_id", id, "workflow_id", t.ParentTaskID, "error", err)
		}
	}
}
