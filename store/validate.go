package store

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// The rules every backend enforces on the params of its methods. Each
// Validate method returns nil or an error wrapping ErrInvalid; a backend
// calls it before it touches its storage, so every backend refuses the
// same params with the same message.

var (
	digestRE     = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	moduleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// ValidDigest reports whether s is a module digest: "sha256:" followed by 64
// lowercase hex digits.
func ValidDigest(s string) bool { return digestRE.MatchString(s) }

// ValidModuleName reports whether s is a module name: 1 to 128 letters,
// digits, '-', '_' and '.', starting with a letter or digit.
func ValidModuleName(s string) bool { return moduleNameRE.MatchString(s) }

// Validate checks an event to append: a type that is not a status type
// (see IsStatusEvent), and a payload that is JSON when given.
func (d *EventDraft) Validate() error {
	if d.Type == "" {
		return fmt.Errorf("%w: event type is required", ErrInvalid)
	}
	if IsStatusEvent(d.Type) {
		return fmt.Errorf("%w: event type %s is written only by status changes", ErrInvalid, d.Type)
	}
	if d.Payload != nil && !json.Valid(d.Payload) {
		return fmt.Errorf("%w: payload of event %s is not JSON", ErrInvalid, d.Type)
	}
	return nil
}

// validateDrafts checks each draft of ds.
func validateDrafts(ds []EventDraft) error {
	for i := range ds {
		if err := ds[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the params of Store.ClientInsert: a name and a token hash.
func (p *ClientInsertParams) Validate() error {
	if p.Name == "" || len(p.TokenHash) == 0 {
		return fmt.Errorf("%w: client name and token hash are required", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.ClientUpdate: a memory limit that is
// not negative.
func (p *ClientUpdateParams) Validate() error {
	if p.MaxMemoryLimit != nil && *p.MaxMemoryLimit < 0 {
		return fmt.Errorf("%w: negative memory limit", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.PairingInsert: a code hash and an
// expiry.
func (p *PairingInsertParams) Validate() error {
	if len(p.CodeHash) == 0 || p.ExpiresAt.IsZero() {
		return fmt.Errorf("%w: code hash and expiry are required", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.PairingRedeem: a code hash, and the
// name and token hash of the new client.
func (p *PairingRedeemParams) Validate() error {
	if len(p.CodeHash) == 0 {
		return fmt.Errorf("%w: code hash is required", ErrInvalid)
	}
	c := ClientInsertParams{Name: p.ClientName, TokenHash: p.TokenHash}
	return c.Validate()
}

// Validate checks the params of Store.ModuleInsert: a module name (see
// ValidModuleName), a digest (see ValidDigest), a positive size and
// functions that each have a name and a known kind.
func (p *ModuleInsertParams) Validate() error {
	switch {
	case !ValidModuleName(p.Name):
		return fmt.Errorf("%w: bad module name %q", ErrInvalid, p.Name)
	case !ValidDigest(p.Digest):
		return fmt.Errorf("%w: digest %q is not sha256:<64 lowercase hex>", ErrInvalid, p.Digest)
	case p.Size <= 0:
		return fmt.Errorf("%w: size must be positive", ErrInvalid)
	}
	for _, f := range p.Functions {
		if f.Name == "" || !f.Kind.Valid() {
			return fmt.Errorf("%w: function %q of kind %q", ErrInvalid, f.Name, f.Kind)
		}
	}
	return nil
}

// Validate checks the params of Store.ServiceInit: periods that are not
// negative and a valid admin client when one is given.
func (p *ServiceInitParams) Validate() error {
	if p.RetentionPeriod < 0 || p.IdempotencyKeyTTL < 0 {
		return fmt.Errorf("%w: negative period", ErrInvalid)
	}
	if p.AdminClient != nil {
		if err := p.AdminClient.Validate(); err != nil {
			return fmt.Errorf("admin client: %w", err)
		}
	}
	return nil
}

// Validate checks the params of Store.ServiceUpdate: periods that are not
// negative.
func (p *ServiceUpdateParams) Validate() error {
	if p.RetentionPeriod < 0 || p.IdempotencyKeyTTL < 0 {
		return fmt.Errorf("%w: negative period", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.TaskInsert: a module, a digest (see
// ValidDigest) and a function; a known kind and restart policy when given;
// a timeout that is not negative; a task id when given; parent events only
// with a parent; valid events; and at most one of Idempotency and
// IdempotencyTask, each valid.
func (p *TaskInsertParams) Validate() error {
	switch {
	case p.Module == "":
		return fmt.Errorf("%w: task module is required", ErrInvalid)
	case !ValidDigest(p.ModuleDigest):
		return fmt.Errorf("%w: task module digest %q is not sha256:<64 lowercase hex>", ErrInvalid, p.ModuleDigest)
	case p.Function == "":
		return fmt.Errorf("%w: task function is required", ErrInvalid)
	case p.Kind != "" && !p.Kind.Valid():
		return fmt.Errorf("%w: unknown task kind %q", ErrInvalid, p.Kind)
	case p.OnRestart != "" && !p.OnRestart.Valid():
		return fmt.Errorf("%w: unknown on_restart policy %q", ErrInvalid, p.OnRestart)
	case p.Timeout < 0:
		return fmt.Errorf("%w: negative task timeout", ErrInvalid)
	case p.RunTimeout < 0, p.ScheduleToStartTimeout < 0, p.HeartbeatTimeout < 0:
		return fmt.Errorf("%w: negative task timeout", ErrInvalid)
	case p.ParentTaskID == "" && len(p.ParentEvents) > 0:
		return fmt.Errorf("%w: parent events without a parent task", ErrInvalid)
	case p.WorkflowID != "" && p.Kind != KindWorkflow:
		return fmt.Errorf("%w: a workflow id names a workflow task", ErrInvalid)
	case p.WorkflowID != "" && !ValidWorkflowID(p.WorkflowID):
		return fmt.Errorf("%w: workflow id %q is not 1 to %d bytes of UTF-8 without control characters", ErrInvalid, p.WorkflowID, MaxWorkflowIDLen)
	case !p.ParentClosePolicy.Valid():
		return fmt.Errorf("%w: unknown parent close policy %q", ErrInvalid, p.ParentClosePolicy)
	case p.ParentClosePolicy != "" && (p.Kind != KindWorkflow || p.ParentTaskID == ""):
		return fmt.Errorf("%w: a parent close policy is a child workflow's", ErrInvalid)
	case p.WorkflowIDReuse != "" && !p.WorkflowIDReuse.Valid():
		return fmt.Errorf("%w: unknown workflow id reuse policy %q", ErrInvalid, p.WorkflowIDReuse)
	}
	if p.ID != "" {
		if err := CheckID(TaskIDPrefix, p.ID); err != nil {
			return err
		}
	}
	if err := validateClaimant(p.Host, p.LeaseTTL, false); err != nil {
		return err
	}
	if err := validateDrafts(p.ParentEvents); err != nil {
		return err
	}
	if p.Idempotency != nil {
		if err := p.Idempotency.Validate(); err != nil {
			return err
		}
	}
	if r := p.IdempotencyTask; r != nil {
		if p.Idempotency != nil {
			return fmt.Errorf("%w: an idempotency key is completed or bound, not both", ErrInvalid)
		}
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the params of Store.TaskList: known statuses.
func (p *TaskListParams) Validate() error {
	for _, s := range p.Statuses {
		if !s.Valid() {
			return fmt.Errorf("%w: unknown status %q", ErrInvalid, s)
		}
	}
	return nil
}

// Validate checks the params of Store.TaskTransition: a task id, expected
// statuses, a known new status that each of them can move to (see
// CanTransition), an error code for failed, and valid events.
func (p *TaskTransitionParams) Validate() error {
	if p.ID == "" {
		return fmt.Errorf("%w: task id is required", ErrInvalid)
	}
	if len(p.From) == 0 {
		return fmt.Errorf("%w: no expected status (From) given", ErrInvalid)
	}
	if !p.To.Valid() {
		return fmt.Errorf("%w: unknown status %q", ErrInvalid, p.To)
	}
	for _, f := range p.From {
		if !CanTransition(f, p.To) {
			return fmt.Errorf("%w: no transition %s → %s", ErrInvalid, f, p.To)
		}
	}
	if p.To == StatusFailed && (p.Error == nil || p.Error.Code == "") {
		return fmt.Errorf("%w: a failed task needs an error code", ErrInvalid)
	}
	if err := validateToken(p.Lease); err != nil {
		return err
	}
	if err := validateClaimant(p.Host, p.LeaseTTL, false); err != nil {
		return err
	}
	if err := validateDrafts(p.Events); err != nil {
		return err
	}
	return validateDrafts(p.ParentEvents)
}

// ValidateChildEnd checks the params of Store.WorkflowChildEnd: those of
// Validate, with a terminal new status.
func (p *TaskTransitionParams) ValidateChildEnd() error {
	if err := p.Validate(); err != nil {
		return err
	}
	if !p.To.IsTerminal() {
		return fmt.Errorf("%w: %s is not a terminal status", ErrInvalid, p.To)
	}
	return nil
}

// Validate checks the params of Store.TaskCheckpoint: a task id, a
// checkpoint and valid events.
func (p *TaskCheckpointParams) Validate() error {
	if p.ID == "" || p.Checkpoint.IsZero() {
		return fmt.Errorf("%w: task id and checkpoint are required", ErrInvalid)
	}
	if err := validateToken(p.Lease); err != nil {
		return err
	}
	return validateDrafts(p.Events)
}

// Validate checks the params of Store.WorkflowCommit: a task id; a wait
// without a terminal status or an end in completed or failed (with an error
// code); valid events; an EndChild that ends a running child completed or
// failed; and children that are valid activity tasks of this workflow, with
// no parent events or idempotency key.
func (p *WorkflowCommitParams) Validate() error {
	switch {
	case p.ID == "":
		return fmt.Errorf("%w: task id is required", ErrInvalid)
	case p.Wait && p.To != "":
		return fmt.Errorf("%w: a waiting workflow has no terminal status", ErrInvalid)
	case !p.Wait && p.To != StatusCompleted && p.To != StatusFailed:
		return fmt.Errorf("%w: a workflow that ends moves to completed or failed, not %q", ErrInvalid, p.To)
	case p.To == StatusFailed && (p.Error == nil || p.Error.Code == ""):
		return fmt.Errorf("%w: a failed task needs an error code", ErrInvalid)
	case p.EndChild != nil && p.Lease != 0:
		return fmt.Errorf("%w: a workflow that folds in a child's end waits and holds no lease", ErrInvalid)
	case p.Wait && (len(p.ParentEvents) > 0 || p.WakeParent):
		return fmt.Errorf("%w: a waiting workflow writes nothing to its parent", ErrInvalid)
	case p.Next != nil && p.To != StatusCompleted:
		return fmt.Errorf("%w: a workflow continues as new once it completed", ErrInvalid)
	}
	if n := p.Next; n != nil {
		next := *n
		next.Kind, next.ContinuedFrom, next.WorkflowIDReuse = KindWorkflow, p.ID, ReuseAllowDuplicate
		if next.WorkflowID == "" || next.ParentTaskID != "" || len(next.ParentEvents) > 0 || next.Idempotency != nil ||
			next.IdempotencyTask != nil || next.Start {
			return fmt.Errorf("%w: the next run of a workflow has a workflow id and no parent, idempotency key or start", ErrInvalid)
		}
		if err := next.Validate(); err != nil {
			return err
		}
	}
	if err := validateToken(p.Lease); err != nil {
		return err
	}
	if err := validateClaimant(p.Host, p.LeaseTTL, false); err != nil {
		return err
	}
	if err := validateDrafts(p.Events); err != nil {
		return err
	}
	if err := validateDrafts(p.ParentEvents); err != nil {
		return err
	}
	if c := p.EndChild; c != nil {
		if err := c.Validate(); err != nil {
			return err
		}
		if !slices.Equal(c.From, []Status{StatusRunning}) {
			return fmt.Errorf("%w: a child folded into a workflow commit ends from running", ErrInvalid)
		}
		if c.To != StatusCompleted && c.To != StatusFailed {
			return fmt.Errorf("%w: a child folded into a workflow commit ends completed or failed, not %q", ErrInvalid, c.To)
		}
	}
	for _, c := range p.Children {
		if c.ParentTaskID != "" && c.ParentTaskID != p.ID {
			return fmt.Errorf("%w: child task of %s names the parent %s", ErrInvalid, p.ID, c.ParentTaskID)
		}
		if len(c.ParentEvents) > 0 || c.Idempotency != nil {
			return fmt.Errorf("%w: a child task of a workflow commit has no parent events or idempotency key", ErrInvalid)
		}
		child := *c
		child.ParentTaskID = p.ID // a child is checked with its parent set
		if err := child.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the params of Store.WorkflowResume: no empty id.
func (p *WorkflowResumeParams) Validate() error {
	for _, id := range p.IDs {
		if id == "" {
			return fmt.Errorf("%w: empty workflow id", ErrInvalid)
		}
	}
	return nil
}

// Validate checks the params of Store.EventAppend: a task id, at least one
// event, valid events, a valid Idempotency when given, and progress counts
// that are not negative.
func (p *EventAppendParams) Validate() error {
	if p.TaskID == "" || len(p.Events) == 0 {
		return fmt.Errorf("%w: task id and events are required", ErrInvalid)
	}
	if err := validateDrafts(p.Events); err != nil {
		return err
	}
	if p.Idempotency != nil {
		if err := p.Idempotency.Validate(); err != nil {
			return err
		}
	}
	if pr := p.Progress; pr != nil && (pr.Done < 0 || pr.Total < 0) {
		return fmt.Errorf("%w: progress counts must not be negative", ErrInvalid)
	}
	return validateToken(p.Lease)
}

// Validate checks the params of Store.IdempotencyKeyBegin: a client, a key,
// a request digest and an expiry.
func (p *IdempotencyKeyBeginParams) Validate() error {
	if p.ClientID == "" || p.Key == "" || len(p.RequestDigest) == 0 || p.ExpiresAt.IsZero() {
		return fmt.Errorf("%w: client, key, request digest and expiry are required", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.IdempotencyKeyComplete: a client, a
// key and a positive status code.
func (p *IdempotencyKeyCompleteParams) Validate() error {
	if p.ClientID == "" || p.Key == "" || p.StatusCode <= 0 {
		return fmt.Errorf("%w: client, key and status code are required", ErrInvalid)
	}
	return nil
}

// Validate checks a key reference: a client and a key.
func (p *IdempotencyKeyRef) Validate() error {
	if p.ClientID == "" || p.Key == "" {
		return fmt.Errorf("%w: client and key are required", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.IdempotencyKeyRelease: a client and a
// key.
func (p *IdempotencyKeyReleaseParams) Validate() error {
	if p.ClientID == "" || p.Key == "" {
		return fmt.Errorf("%w: client and key are required", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.RetentionPurge: a cutoff time and a
// batch size that is not negative.
func (p *RetentionPurgeParams) Validate() error {
	if p.OlderThan.IsZero() {
		return fmt.Errorf("%w: purge cutoff (OlderThan) is required", ErrInvalid)
	}
	if p.Batch < 0 {
		return fmt.Errorf("%w: negative purge batch", ErrInvalid)
	}
	return nil
}

// validateToken checks a fencing token: 0 (not fenced) or positive.
func validateToken(token int64) error {
	if token < 0 {
		return fmt.Errorf("%w: negative lease token", ErrInvalid)
	}
	return nil
}

// Validate checks the params of Store.TaskOverdue: a Limit between 0 and
// MaxListLimit.
func (p *TaskOverdueParams) Validate() error {
	if p.Limit < 0 || p.Limit > MaxListLimit {
		return fmt.Errorf("%w: overdue limit %d is not between 0 and %d", ErrInvalid, p.Limit, MaxListLimit)
	}
	return nil
}
