package store

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// DefaultLeaseTTL is the lease a claim gives when its params name none. A
// host renews its leases (LeaseExtend) well within it, about every third of
// it; a host that stops renewing loses its tasks to the next TaskReclaim
// after it ran out.
const DefaultLeaseTTL = 20 * time.Second

// ReasonLeaseExpired is the reason of the status events TaskReclaim writes
// for a task whose lease expired.
const ReasonLeaseExpired = "lease_expired"

// Lease is the hold of one host on a claimed task (see the package doc,
// "Leases and fencing").
type Lease struct {
	// Host is the host that holds the lease, or "" when none does (or the
	// claim named no host).
	Host string
	// Token is the fencing token of the last lease handed out for the task:
	// it goes up by one at every claim and every takeover, and is kept once
	// the lease is released, so a token seen once never comes back. It is 0
	// before the first claim.
	Token int64
	// ExpiresAt is when the lease runs out unless renewed, by the store's
	// clock (the database's on a shared store); the zero time when no lease
	// is held.
	// Millisecond precision, UTC.
	ExpiresAt time.Time
}

// Held reports whether a lease is held: the task was claimed and has not
// since gone back to queued, begun to wait (a workflow) or finished. A held
// lease may have expired without having been taken over yet.
func (l Lease) Held() bool { return !l.ExpiresAt.IsZero() }

// LeaseHeld names a lease a host holds: a task and the token its claim
// gave.
type LeaseHeld struct {
	// TaskID is the task. Required.
	TaskID string
	// Token is the lease's fencing token. Required.
	Token int64
}

// LeaseExtendParams are the params of Store.LeaseExtend.
type LeaseExtendParams struct {
	// Host is the host renewing its leases (see ValidHost). Required.
	Host string
	// TTL is the new lease, counted from the store's clock at the call.
	// Defaults to DefaultLeaseTTL.
	TTL time.Duration
	// Held are the leases to renew. Defaults to none (the call does
	// nothing).
	Held []LeaseHeld
}

// LeaseExtendResult is what Store.LeaseExtend did.
type LeaseExtendResult struct {
	// Lost lists the tasks of params.Held whose lease the host no longer
	// holds (taken over, released, or the task is gone), in the order of
	// params.Held. Their writes now fail with ErrLeaseLost.
	Lost []string
	// Cancelling lists the tasks of params.Held whose lease was renewed and
	// that are cancelling, in the order of params.Held: a cancel accepted
	// by any host reaches the host running the task at its next renewal.
	Cancelling []string
}

// TaskReclaimParams are the params of Store.TaskReclaim.
type TaskReclaimParams struct {
	// Host is the host taking over (see ValidHost). Required.
	Host string
	// LeaseTTL is the lease of the tasks it takes over running. Defaults to
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Limit caps the tasks reclaimed by one call. Defaults to 100.
	Limit int
	// StaleKeysAfter, when positive, also releases the in-flight
	// idempotency keys bound to no task that were created longer ago than
	// this by the store's clock: their request is taken to have died with
	// its host. Give it well above the longest request. Defaults to 0 (keys
	// are left alone).
	StaleKeysAfter time.Duration
	// Restart also takes over the tasks whose lease params.Host holds,
	// live or expired: the host is starting again, so what its earlier run
	// held is left over and need not wait for the lease to run out. Only a
	// host that is starting, under an id no other process uses, may set
	// it. Defaults to false.
	Restart bool
}

// TaskReclaimResult is what Store.TaskReclaim did, by the persistence
// §11.3 cell each task fell in.
type TaskReclaimResult struct {
	// Failed lists tasks moved to failed with server_restarted (policy
	// fail).
	Failed []string
	// Requeued lists tasks moved from loading or running back to queued.
	Requeued []string
	// Cancelled lists cancelling tasks moved to cancelled.
	Cancelled []string
	// Resumed are running tasks of policy resume, taken over running with
	// their checkpoint and a fresh lease for params.Host, for it to
	// continue (a workflow runs again from its journal).
	Resumed []*Task
	// IdempotencyKeysReleased counts the stale idempotency keys released
	// (see TaskReclaimParams.StaleKeysAfter).
	IdempotencyKeysReleased int
}

var hostRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

// ValidHost reports whether s is a host id: 1 to 128 letters, digits, '.',
// '_', ':', '@' and '-', starting with a letter or digit.
func ValidHost(s string) bool { return hostRE.MatchString(s) }

// validateClaimant checks the host and lease of a claim: a valid host id
// when given (or always, with required) and a lease that is not negative.
func validateClaimant(host string, ttl time.Duration, required bool) error {
	if host == "" && required {
		return fmt.Errorf("%w: host is required", ErrInvalid)
	}
	if host != "" && !ValidHost(host) {
		return fmt.Errorf("%w: bad host id %q", ErrInvalid, host)
	}
	if ttl < 0 {
		return fmt.Errorf("%w: negative lease", ErrInvalid)
	}
	return nil
}

// LeaseTTLOr returns ttl truncated to the millisecond, or DefaultLeaseTTL
// for 0: the lease a claim with ttl gives.
func LeaseTTLOr(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return DefaultLeaseTTL
	}
	return max(ttl.Truncate(time.Millisecond), time.Millisecond)
}

// Validate checks the params of Store.TaskClaim: a valid host when given
// and a lease that is not negative.
func (p *TaskClaimParams) Validate() error { return validateClaimant(p.Host, p.LeaseTTL, false) }

// Validate checks the params of Store.WorkflowClaim: a valid host when
// given and a lease that is not negative.
func (p *WorkflowClaimParams) Validate() error { return validateClaimant(p.Host, p.LeaseTTL, false) }

// Validate checks the params of Store.LeaseExtend: a host, a lease that is
// not negative, and leases that each name a task and a token.
func (p *LeaseExtendParams) Validate() error {
	if err := validateClaimant(p.Host, p.TTL, true); err != nil {
		return err
	}
	for _, h := range p.Held {
		if h.TaskID == "" || h.Token <= 0 {
			return fmt.Errorf("%w: a held lease names a task and a positive token", ErrInvalid)
		}
	}
	return nil
}

// Validate checks the params of Store.TaskReclaim: a host, and a lease, a
// limit and a key age that are not negative.
func (p *TaskReclaimParams) Validate() error {
	if err := validateClaimant(p.Host, p.LeaseTTL, true); err != nil {
		return err
	}
	if p.Limit < 0 || p.StaleKeysAfter < 0 {
		return fmt.Errorf("%w: negative limit or key age", ErrInvalid)
	}
	return nil
}

// CheckLease returns ErrLeaseLost unless a write fenced by token may change
// task, the task's current row: token 0 is not fenced; any other token must
// be the token of the lease task holds.
func CheckLease(task *Task, token int64) error {
	if token == 0 || (task.Lease.Held() && task.Lease.Token == token) {
		return nil
	}
	holder := "nobody"
	if task.Lease.Held() {
		holder = fmt.Sprintf("token %d of host %q", task.Lease.Token, task.Lease.Host)
	}
	return fmt.Errorf("%w: task %s: lease token %d, held by %s", ErrLeaseLost, task.ID, token, holder)
}

// ReclaimPayload is the payload of the task.recovered event that starts the
// takeover of task, whose lease expired, by host: task's status (before
// the takeover moves it on), reason lease_expired, the previous host and
// the new one.
func ReclaimPayload(task *Task, host string) []byte {
	b, _ := json.Marshal(StatusEvent{ // plain strings and ints
		Status: task.Status, From: task.Status, Attempt: task.Attempt, Reason: ReasonLeaseExpired,
		PreviousHost: task.Lease.Host, Host: host,
	})
	return b
}

// LeaseExpiredError is the error of a task that TaskReclaim fails (policy
// fail): code server_restarted, as persistence §11.3 says for a task its
// host left behind.
func LeaseExpiredError(task *Task) *TaskError {
	return &TaskError{
		Code: CodeServerRestarted,
		Message: fmt.Sprintf("the lease of host %q expired while the task was %s (on_restart=%s)",
			task.Lease.Host, task.Status, task.OnRestart),
	}
}
