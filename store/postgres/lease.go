package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

// grant is a lease to hand out: to host, for ttl.
type grant struct {
	host string
	ttl  time.Duration
}

// newGrant returns the lease a claim by host with ttl gives.
func newGrant(host string, ttl time.Duration) *grant {
	return &grant{host: host, ttl: store.LeaseTTLOr(ttl)}
}

// releaseLease drops the lease task holds, keeping its token.
func releaseLease(task *store.Task) {
	task.Lease.Host, task.Lease.ExpiresAt = "", time.Time{}
}

// clock returns the database's clock for this transaction: now(), the
// time its first statement ran, at millisecond precision. Lease expiry is
// counted from it, so hosts whose clocks disagree agree on leases. The
// first call costs a round trip (which carries the queued writes along).
func (t *tx) clock() (time.Time, error) {
	if t.dbNow.IsZero() {
		var n time.Time
		if err := t.queryRow(clockSQL).Scan(&n); err != nil {
			return time.Time{}, fmt.Errorf("read the database clock: %w", err)
		}
		t.dbNow = n.UTC()
	}
	return t.dbNow, nil
}

// laterClock hands fn the database's clock without a round trip of its
// own: at once when this transaction read it already, else with the next
// round trip, as a read queued with the writes (at the latest the
// COMMIT's, so before the method returns).
func (t *tx) laterClock(fn func(time.Time)) {
	if !t.dbNow.IsZero() {
		fn(t.dbNow)
		return
	}
	t.queued = append(t.queued, queuedStmt{sql: clockSQL, job: t.job, scan: func(r pgx.Row) error {
		var n time.Time
		if err := r.Scan(&n); err != nil {
			return fmt.Errorf("read the database clock: %w", err)
		}
		t.dbNow = n.UTC()
		fn(t.dbNow)
		return nil
	}})
}

// clockSQL reads the database's clock: the transaction's now(), at the
// store's precision.
const clockSQL = "SELECT date_trunc('milliseconds', now())"

// applyGrant gives task (in memory) the next lease of g, from the
// database's clock.
func (t *tx) applyGrant(task *store.Task, g *grant) error {
	n, err := t.clock()
	if err != nil {
		return err
	}
	task.Lease = store.Lease{Host: g.host, Token: task.Lease.Token + 1, ExpiresAt: n.Add(g.ttl)}
	return nil
}

// grantLease gives task, a row this transaction holds, the next lease of
// g and writes it.
func (t *tx) grantLease(task *store.Task, g *grant) error {
	if err := t.applyGrant(task, g); err != nil {
		return err
	}
	t.laterOne("UPDATE tasks SET lease_host = $1, lease_token = $2, lease_expires_at = $3 WHERE id = $4",
		task.Lease.Host, task.Lease.Token, task.Lease.ExpiresAt, task.ID)
	return nil
}

// Shared implements store.Store: hosts share a PostgreSQL store.
func (db *DB) Shared() bool { return true }

// leaseExtendSQL renews, in one statement, every listed lease the host
// still holds, and returns the ids of the others in the order given, with
// those of the renewed ones that are cancelling (lost false). The
// rows are locked in id order, as every multi-row lock of tasks is.
const leaseExtendSQL = `WITH held AS (
		SELECT h.id, h.token, h.ord FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS h (id, token, ord)
	), mine AS (
		SELECT t.id FROM tasks t JOIN held h ON t.id = h.id
		WHERE t.lease_token = h.token AND t.lease_host = $3 AND t.lease_expires_at IS NOT NULL
		ORDER BY t.id FOR NO KEY UPDATE OF t
	), renewed AS (
		UPDATE tasks t SET lease_expires_at = date_trunc('milliseconds', now()) + $4 * interval '1 millisecond'
		FROM mine WHERE t.id = mine.id
		RETURNING t.id, t.status
	)
	SELECT h.id, r.id IS NULL FROM held h LEFT JOIN renewed r ON r.id = h.id
	WHERE r.id IS NULL OR r.status = 'cancelling' ORDER BY h.ord`

// LeaseExtend implements store.Store, in one statement.
func (db *DB) LeaseExtend(ctx context.Context, p *store.LeaseExtendParams) (*store.LeaseExtendResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	res := &store.LeaseExtendResult{}
	if len(p.Held) == 0 {
		return res, nil
	}
	ids := make([]string, len(p.Held))
	tokens := make([]int64, len(p.Held))
	for i, h := range p.Held {
		ids[i], tokens[i] = h.TaskID, h.Token
	}
	ttl := store.LeaseTTLOr(p.TTL).Milliseconds()
	err := db.write(ctx, func(t *tx) error {
		rows, err := t.query(leaseExtendSQL, ids, tokens, p.Host, ttl)
		if err != nil {
			return err
		}
		res.Lost, res.Cancelling = nil, nil
		var (
			id   string
			lost bool
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &lost}, func() error {
			if lost {
				res.Lost = append(res.Lost, id)
			} else {
				res.Cancelling = append(res.Cancelling, id)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	return res, nil
}

// reclaimSQL locks the tasks whose lease expired, earliest first, skipping
// those another transaction holds: hosts reclaiming at once take
// different tasks, and a task being written to is left for the next round.
// A row whose lease was renewed meanwhile no longer matches once locked.
// With $3 (a restart) the rows whose lease host $4 holds match too.
const reclaimSQL = "SELECT " + taskColumns + ` FROM tasks
	WHERE lease_expires_at IS NOT NULL AND (lease_expires_at < $1 OR ($3 AND lease_host = $4))
		AND status IN ('loading', 'running', 'cancelling')
	ORDER BY lease_expires_at, id LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED`

// TaskReclaim implements store.Store, in one transaction.
func (db *DB) TaskReclaim(ctx context.Context, p *store.TaskReclaimParams) (*store.TaskReclaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("reclaim tasks: %w", err)
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	g := newGrant(p.Host, p.LeaseTTL)
	res := &store.TaskReclaimResult{}
	err := db.write(ctx, func(t *tx) error {
		*res = store.TaskReclaimResult{}
		n, err := t.clock()
		if err != nil {
			return err
		}
		rows, err := t.query(reclaimSQL, n, limit, p.Restart, p.Host)
		if err != nil {
			return err
		}
		tasks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Task, error) { return scanTask(r) })
		if err != nil {
			return err
		}
		for _, task := range tasks {
			if err := t.reclaimTask(task, g, n, res); err != nil {
				return fmt.Errorf("task %s: %w", task.ID, err)
			}
		}
		if p.StaleKeysAfter > 0 {
			k, err := t.affected("DELETE FROM idempotency_keys WHERE state = 'in_flight' AND task_id = '' AND created_at < $1",
				n.Add(-p.StaleKeysAfter))
			if err != nil {
				return err
			}
			res.IdempotencyKeysReleased = int(k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reclaim tasks: %w", err)
	}
	if len(res.Failed)+len(res.Requeued)+len(res.Cancelled)+len(res.Resumed) > 0 {
		db.log.Info("reclaimed tasks", "host", p.Host, "failed", len(res.Failed), "requeued", len(res.Requeued),
			"resumed", len(res.Resumed), "cancelled", len(res.Cancelled))
	}
	return res, nil
}

// reclaimTask takes over task, a row this transaction holds whose lease
// expired: the task.recovered event first, then the persistence §11.3 cell
// of its policy. n is the database's clock.
func (t *tx) reclaimTask(task *store.Task, g *grant, n time.Time, res *store.TaskReclaimResult) error {
	to, ok := store.RecoveryTarget(task.Status, task.OnRestart)
	if !ok {
		return nil
	}
	recovered := store.EventDraft{Type: store.EventRecovered, Payload: store.ReclaimPayload(task, g.host)}
	if to == store.StatusRunning { // resume: taken over running with a fresh lease
		prev := task.LastSeq
		task.LastSeq++
		task.UpdatedAt = n
		if err := t.applyGrant(task, g); err != nil {
			return err
		}
		t.laterOne(`UPDATE tasks SET last_seq = $1, updated_at = $2, lease_host = $3, lease_token = $4, lease_expires_at = $5
			WHERE id = $6 AND last_seq = $7`, task.LastSeq, n, task.Lease.Host, task.Lease.Token, task.Lease.ExpiresAt,
			task.ID, prev)
		t.insertEvent(task.ID, task.LastSeq, store.EventRecovered, recovered.Payload, n)
		res.Resumed = append(res.Resumed, task)
		return nil
	}
	m := &move{to: to, reason: store.ReasonLeaseExpired, events: []store.EventDraft{recovered}}
	switch to {
	case store.StatusFailed:
		m.err = store.LeaseExpiredError(task)
		res.Failed = append(res.Failed, task.ID)
	case store.StatusCancelled:
		res.Cancelled = append(res.Cancelled, task.ID)
	default:
		m.clearCheckpoint = task.OnRestart == store.OnRestartRetry // retry starts from scratch
		res.Requeued = append(res.Requeued, task.ID)
	}
	return t.move(task, m, n)
}
