package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// validator is any params struct of the contract.
type validator interface{ Validate() error }

// validateCase is one params value and the message its Validate gives, or
// "" for valid params.
type validateCase struct {
	name string
	p    validator
	want string
}

func runValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestValidDigestAndModuleName(t *testing.T) {
	for s, want := range map[string]bool{
		digest:                        true,
		"sha256:" + digest[7:71]:      true,
		strings.ToUpper(digest):       false,
		digest[:70]:                   false,
		digest + "0":                  false,
		"md5:" + digest[7:]:           false,
		"":                            false,
		" " + digest:                  false,
		digest[:7] + "g" + digest[8:]: false,
	} {
		if got := store.ValidDigest(s); got != want {
			t.Errorf("ValidDigest(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{
		"echo":                   true,
		"E.c_h-o9":               true,
		"0":                      true,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"":                       false,
		"-echo":                  false,
		".echo":                  false,
		"ec ho":                  false,
		"ec/ho":                  false,
		"échо":                   false,
	} {
		if got := store.ValidModuleName(s); got != want {
			t.Errorf("ValidModuleName(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidateEventDraft(t *testing.T) {
	runValidate(t, []validateCase{
		{"Valid", &store.EventDraft{Type: store.EventLog, Payload: json.RawMessage(`{"a":1}`)}, ""},
		{"NoPayload", &store.EventDraft{Type: store.EventLog}, ""},
		{"NoType", &store.EventDraft{}, "event type is required"},
		{"StatusType", &store.EventDraft{Type: store.EventStatusChanged}, "written only by status changes"},
		{"TerminalType", &store.EventDraft{Type: store.EventResponseCompleted}, "written only by status changes"},
		{"NotJSON", &store.EventDraft{Type: store.EventLog, Payload: json.RawMessage("{")}, "is not JSON"},
	})
}

func TestValidateClientAndPairing(t *testing.T) {
	negative, zero := int64(-1), int64(0)
	later := time.Now().Add(time.Hour)
	runValidate(t, []validateCase{
		{"ClientInsert", &store.ClientInsertParams{Name: "laptop", TokenHash: []byte{1}}, ""},
		{"ClientInsert/NoName", &store.ClientInsertParams{TokenHash: []byte{1}}, "client name and token hash are required"},
		{"ClientInsert/NoHash", &store.ClientInsertParams{Name: "laptop"}, "client name and token hash are required"},
		{"ClientUpdate", &store.ClientUpdateParams{ID: "cli_a", MaxMemoryLimit: &zero}, ""},
		{"ClientUpdate/Unchanged", &store.ClientUpdateParams{ID: "cli_a"}, ""},
		{"ClientUpdate/Negative", &store.ClientUpdateParams{ID: "cli_a", MaxMemoryLimit: &negative}, "negative memory limit"},
		{"PairingInsert", &store.PairingInsertParams{CodeHash: []byte{1}, ExpiresAt: later}, ""},
		{"PairingInsert/NoHash", &store.PairingInsertParams{ExpiresAt: later}, "code hash and expiry are required"},
		{"PairingInsert/NoExpiry", &store.PairingInsertParams{CodeHash: []byte{1}}, "code hash and expiry are required"},
		{"PairingRedeem", &store.PairingRedeemParams{CodeHash: []byte{1}, ClientName: "x", TokenHash: []byte{2}}, ""},
		{"PairingRedeem/NoCode", &store.PairingRedeemParams{ClientName: "x", TokenHash: []byte{2}}, "code hash is required"},
		{"PairingRedeem/NoClientName", &store.PairingRedeemParams{CodeHash: []byte{1}, TokenHash: []byte{2}}, "client name and token hash are required"},
		{"PairingRedeem/NoTokenHash", &store.PairingRedeemParams{CodeHash: []byte{1}, ClientName: "x"}, "client name and token hash are required"},
	})
}

func TestValidateServiceAndModule(t *testing.T) {
	runValidate(t, []validateCase{
		{"ServiceInit", &store.ServiceInitParams{}, ""},
		{"ServiceInit/Admin", &store.ServiceInitParams{AdminClient: &store.ClientInsertParams{Name: "admin", TokenHash: []byte{1}}}, ""},
		{"ServiceInit/NegativeRetention", &store.ServiceInitParams{RetentionPeriod: -1}, "negative period"},
		{"ServiceInit/NegativeTTL", &store.ServiceInitParams{IdempotencyKeyTTL: -1}, "negative period"},
		{"ServiceInit/BadAdmin", &store.ServiceInitParams{AdminClient: &store.ClientInsertParams{Name: "admin"}}, "admin client: store: invalid argument: client name"},
		{"ServiceUpdate", &store.ServiceUpdateParams{RetentionPeriod: time.Hour}, ""},
		{"ServiceUpdate/Negative", &store.ServiceUpdateParams{RetentionPeriod: -time.Hour}, "negative period"},
		{"ModuleInsert", &store.ModuleInsertParams{
			Name: "echo", Digest: digest, Size: 1,
			Functions: []store.Function{{Name: "f", Kind: store.KindWorkflow}},
		}, ""},
		{"ModuleInsert/BadName", &store.ModuleInsertParams{Name: "", Digest: digest, Size: 1}, `bad module name ""`},
		{"ModuleInsert/BadDigest", &store.ModuleInsertParams{Name: "echo", Digest: "sha256:x", Size: 1}, `digest "sha256:x" is not sha256:<64 lowercase hex>`},
		{"ModuleInsert/NoSize", &store.ModuleInsertParams{Name: "echo", Digest: digest}, "size must be positive"},
		{"ModuleInsert/FunctionNoName", &store.ModuleInsertParams{
			Name: "echo", Digest: digest, Size: 1,
			Functions: []store.Function{{Kind: store.KindActivity}},
		}, `function "" of kind "activity"`},
		{"ModuleInsert/FunctionBadKind", &store.ModuleInsertParams{
			Name: "echo", Digest: digest, Size: 1,
			Functions: []store.Function{{Name: "f", Kind: "daemon"}},
		}, `function "f" of kind "daemon"`},
	})
}

func TestValidateTask(t *testing.T) {
	ins := func(mod func(*store.TaskInsertParams)) *store.TaskInsertParams {
		p := &store.TaskInsertParams{Module: "echo", ModuleDigest: digest, Function: "echo"}
		if mod != nil {
			mod(p)
		}
		return p
	}
	done := &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 202}
	ref := &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"}
	running := []store.Status{store.StatusRunning}
	runValidate(t, []validateCase{
		{"Insert", ins(nil), ""},
		{"Insert/Full", ins(func(p *store.TaskInsertParams) {
			p.ID, p.Kind, p.OnRestart, p.Timeout = store.NewID(store.TaskIDPrefix), store.KindWorkflow, store.OnRestartResume, time.Second
			p.ParentTaskID, p.ParentEvents, p.Idempotency = "task_parent", []store.EventDraft{{Type: "activity.scheduled"}}, done
		}), ""},
		{"Insert/Bound", ins(func(p *store.TaskInsertParams) { p.IdempotencyTask = ref }), ""},
		{"Insert/NoModule", ins(func(p *store.TaskInsertParams) { p.Module = "" }), "task module is required"},
		{"Insert/BadDigest", ins(func(p *store.TaskInsertParams) { p.ModuleDigest = "x" }), `task module digest "x" is not sha256:<64 lowercase hex>`},
		{"Insert/NoFunction", ins(func(p *store.TaskInsertParams) { p.Function = "" }), "task function is required"},
		{"Insert/Kind", ins(func(p *store.TaskInsertParams) { p.Kind = "daemon" }), `unknown task kind "daemon"`},
		{"Insert/OnRestart", ins(func(p *store.TaskInsertParams) { p.OnRestart = "maybe" }), `unknown on_restart policy "maybe"`},
		{"Insert/Timeout", ins(func(p *store.TaskInsertParams) { p.Timeout = -1 }), "negative task timeout"},
		{"Insert/ParentEvents", ins(func(p *store.TaskInsertParams) { p.ParentEvents = []store.EventDraft{{Type: "x"}} }), "parent events without a parent task"},
		{"Insert/ID", ins(func(p *store.TaskInsertParams) { p.ID = "cli_01HZZZZZZZZZZZZZZZZZZZZZZZ" }), `lacks prefix "task_"`},
		{"Insert/BadParentEvent", ins(func(p *store.TaskInsertParams) {
			p.ParentTaskID, p.ParentEvents = "task_parent", []store.EventDraft{{Type: store.EventResponseCreated}}
		}), "written only by status changes"},
		{"Insert/BadCompletion", ins(func(p *store.TaskInsertParams) {
			p.Idempotency = &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k"}
		}), "client, key and status code are required"},
		{"Insert/CompletedAndBound", ins(func(p *store.TaskInsertParams) { p.Idempotency, p.IdempotencyTask = done, ref }), "completed or bound, not both"},
		{"Insert/BoundNoKey", ins(func(p *store.TaskInsertParams) { p.IdempotencyTask = &store.IdempotencyKeyRef{ClientID: "cli_a"} }), "client and key are required"},

		{"List", &store.TaskListParams{Statuses: []store.Status{store.StatusQueued, store.StatusFailed}}, ""},
		{"List/Status", &store.TaskListParams{Statuses: []store.Status{"sleeping"}}, `unknown status "sleeping"`},

		{"Transition", &store.TaskTransitionParams{ID: "task_a", From: running, To: store.StatusCompleted}, ""},
		{"Transition/NoID", &store.TaskTransitionParams{From: running, To: store.StatusCompleted}, "task id is required"},
		{"Transition/NoFrom", &store.TaskTransitionParams{ID: "task_a", To: store.StatusCompleted}, "no expected status (From) given"},
		{"Transition/UnknownTo", &store.TaskTransitionParams{ID: "task_a", From: running, To: "sleeping"}, `unknown status "sleeping"`},
		{"Transition/NoEdge", &store.TaskTransitionParams{ID: "task_a", From: []store.Status{store.StatusCompleted}, To: store.StatusRunning}, "no transition completed → running"},
		{"Transition/FailedNoCode", &store.TaskTransitionParams{ID: "task_a", From: running, To: store.StatusFailed, Error: &store.TaskError{}}, "a failed task needs an error code"},
		{"Transition/BadEvent", &store.TaskTransitionParams{ID: "task_a", From: running, To: store.StatusCompleted, Events: []store.EventDraft{{}}}, "event type is required"},
		{"Transition/BadParentEvent", &store.TaskTransitionParams{
			ID: "task_a", From: running, To: store.StatusCompleted,
			ParentEvents: []store.EventDraft{{Type: "x", Payload: json.RawMessage("[")}},
		}, "is not JSON"},

		{"Checkpoint", &store.TaskCheckpointParams{ID: "task_a", Checkpoint: store.Payload{Codec: "avro", Data: []byte{1}}}, ""},
		{"Checkpoint/None", &store.TaskCheckpointParams{ID: "task_a"}, "task id and checkpoint are required"},
		{"Checkpoint/BadEvent", &store.TaskCheckpointParams{
			ID: "task_a", Checkpoint: store.Payload{Codec: "avro", Data: []byte{1}},
			Events: []store.EventDraft{{Type: store.EventRecovered}},
		}, "written only by status changes"},
	})
}

func TestValidateChildEnd(t *testing.T) {
	running := []store.Status{store.StatusRunning}
	cases := []struct {
		name string
		p    store.TaskTransitionParams
		want string
	}{
		{"Completed", store.TaskTransitionParams{ID: "task_a", From: running, To: store.StatusCompleted}, ""},
		{"Cancelled", store.TaskTransitionParams{ID: "task_a", From: running, To: store.StatusCancelled}, ""},
		{"Queued", store.TaskTransitionParams{ID: "task_a", From: running, To: store.StatusQueued}, "queued is not a terminal status"},
		{"NoID", store.TaskTransitionParams{From: running, To: store.StatusCompleted}, "task id is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.ValidateChildEnd()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("ValidateChildEnd() = %v, want nil", err)
			case c.want != "" && (!errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("ValidateChildEnd() = %v, want ErrInvalid with %q", err, c.want)
			}
		})
	}
}

func TestValidateWorkflow(t *testing.T) {
	child := func() *store.TaskInsertParams {
		return &store.TaskInsertParams{ID: store.NewID(store.TaskIDPrefix), Module: "echo", ModuleDigest: digest, Function: "echo"}
	}
	end := func(to store.Status) *store.TaskTransitionParams {
		return &store.TaskTransitionParams{ID: "task_c", From: []store.Status{store.StatusRunning}, To: to, Error: &store.TaskError{Code: "boom"}}
	}
	runValidate(t, []validateCase{
		{"Wait", &store.WorkflowCommitParams{ID: "task_w", Wait: true, Children: []*store.TaskInsertParams{child()}, EndChild: end(store.StatusCompleted)}, ""},
		{"End", &store.WorkflowCommitParams{ID: "task_w", To: store.StatusFailed, Error: &store.TaskError{Code: "boom"}}, ""},
		{"NoID", &store.WorkflowCommitParams{Wait: true}, "task id is required"},
		{"WaitAndEnd", &store.WorkflowCommitParams{ID: "task_w", Wait: true, To: store.StatusCompleted}, "a waiting workflow has no terminal status"},
		{"EndCancelled", &store.WorkflowCommitParams{ID: "task_w", To: store.StatusCancelled}, `moves to completed or failed, not "cancelled"`},
		{"FailedNoCode", &store.WorkflowCommitParams{ID: "task_w", To: store.StatusFailed}, "a failed task needs an error code"},
		{"BadEvent", &store.WorkflowCommitParams{ID: "task_w", Wait: true, Events: []store.EventDraft{{}}}, "event type is required"},
		{"EndChildBad", &store.WorkflowCommitParams{ID: "task_w", Wait: true, EndChild: &store.TaskTransitionParams{ID: "task_c"}}, "no expected status"},
		{"EndChildFromQueued", &store.WorkflowCommitParams{ID: "task_w", Wait: true, EndChild: &store.TaskTransitionParams{
			ID: "task_c", From: []store.Status{store.StatusQueued}, To: store.StatusCancelled,
		}}, "ends from running"},
		{"EndChildCancelled", &store.WorkflowCommitParams{ID: "task_w", Wait: true, EndChild: end(store.StatusCancelled)}, `ends completed or failed, not "cancelled"`},
		{"ChildOfOther", &store.WorkflowCommitParams{ID: "task_w", Wait: true, Children: []*store.TaskInsertParams{
			{Module: "echo", ModuleDigest: digest, Function: "echo", ParentTaskID: "task_x"},
		}}, "child task of task_w names the parent task_x"},
		{"ChildParentEvents", &store.WorkflowCommitParams{ID: "task_w", Wait: true, Children: []*store.TaskInsertParams{
			{Module: "echo", ModuleDigest: digest, Function: "echo", ParentEvents: []store.EventDraft{{Type: "x"}}},
		}}, "has no parent events or idempotency key"},
		{"ChildBad", &store.WorkflowCommitParams{ID: "task_w", Wait: true, Children: []*store.TaskInsertParams{{Module: "echo", ModuleDigest: digest}}}, "task function is required"},
		{"Resume", &store.WorkflowResumeParams{IDs: []string{"task_w"}}, ""},
		{"Resume/None", &store.WorkflowResumeParams{}, ""},
		{"Resume/EmptyID", &store.WorkflowResumeParams{IDs: []string{"task_w", ""}}, "empty workflow id"},
	})
}

func TestValidateEventAndIdempotency(t *testing.T) {
	log := []store.EventDraft{{Type: store.EventLog}}
	later := time.Now().Add(time.Hour)
	runValidate(t, []validateCase{
		{"Append", &store.EventAppendParams{
			TaskID: "task_a", Events: log, Progress: &store.TaskProgress{Done: 1, Total: 2},
			Idempotency: &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 200},
		}, ""},
		{"Append/NoTask", &store.EventAppendParams{Events: log}, "task id and events are required"},
		{"Append/NoEvents", &store.EventAppendParams{TaskID: "task_a"}, "task id and events are required"},
		{"Append/BadEvent", &store.EventAppendParams{TaskID: "task_a", Events: []store.EventDraft{{Type: store.EventResponseFailed}}}, "written only by status changes"},
		{"Append/BadKey", &store.EventAppendParams{TaskID: "task_a", Events: log, Idempotency: &store.IdempotencyKeyCompleteParams{Key: "k", StatusCode: 200}}, "client, key and status code are required"},
		{"Append/NegativeDone", &store.EventAppendParams{TaskID: "task_a", Events: log, Progress: &store.TaskProgress{Done: -1}}, "progress counts must not be negative"},
		{"Append/NegativeTotal", &store.EventAppendParams{TaskID: "task_a", Events: log, Progress: &store.TaskProgress{Total: -1}}, "progress counts must not be negative"},

		{"Begin", &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k", RequestDigest: []byte{1}, ExpiresAt: later}, ""},
		{"Begin/NoClient", &store.IdempotencyKeyBeginParams{Key: "k", RequestDigest: []byte{1}, ExpiresAt: later}, "client, key, request digest and expiry are required"},
		{"Begin/NoDigest", &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k", ExpiresAt: later}, "client, key, request digest and expiry are required"},
		{"Begin/NoExpiry", &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k", RequestDigest: []byte{1}}, "client, key, request digest and expiry are required"},
		{"Complete", &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 201}, ""},
		{"Complete/NoStatus", &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k"}, "client, key and status code are required"},
		{"Complete/NoKey", &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", StatusCode: 201}, "client, key and status code are required"},
		{"Ref", &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"}, ""},
		{"Ref/NoClient", &store.IdempotencyKeyRef{Key: "k"}, "client and key are required"},
		{"Release", &store.IdempotencyKeyReleaseParams{ClientID: "cli_a", Key: "k"}, ""},
		{"Release/NoKey", &store.IdempotencyKeyReleaseParams{ClientID: "cli_a"}, "client and key are required"},
		{"Release/NoClient", &store.IdempotencyKeyReleaseParams{Key: "k"}, "client and key are required"},

		{"Purge", &store.RetentionPurgeParams{OlderThan: later}, ""},
		{"Purge/Batch", &store.RetentionPurgeParams{OlderThan: later, Batch: 10}, ""},
		{"Purge/NoCutoff", &store.RetentionPurgeParams{Batch: 10}, "purge cutoff (OlderThan) is required"},
		{"Purge/NegativeBatch", &store.RetentionPurgeParams{OlderThan: later, Batch: -1}, "negative purge batch"},
	})
}

func TestValidateLeases(t *testing.T) {
	for s, want := range map[string]bool{
		"host-1": true, "h": true, "weft@10.0.0.1:8080": true, "a.b_c": true,
		"": false, "-h": false, "bad host": false, strings.Repeat("h", 129): false,
	} {
		if got := store.ValidHost(s); got != want {
			t.Errorf("ValidHost(%q) = %v, want %v", s, got, want)
		}
	}
	runValidate(t, []validateCase{
		{"ClaimNoHost", &store.TaskClaimParams{}, ""},
		{"ClaimBadHost", &store.TaskClaimParams{Host: "a b"}, "bad host id"},
		{"ClaimNegativeLease", &store.TaskClaimParams{Host: "h", LeaseTTL: -1}, "negative lease"},
		{"WorkflowClaimBadHost", &store.WorkflowClaimParams{Host: "-"}, "bad host id"},
		{"InsertBadHost", &store.TaskInsertParams{Module: "m", ModuleDigest: digest, Function: "f", Start: true, Host: "a b"}, "bad host id"},
		{"ExtendNoHost", &store.LeaseExtendParams{}, "host is required"},
		{"ExtendNoToken", &store.LeaseExtendParams{Host: "h", Held: []store.LeaseHeld{{TaskID: "task_x"}}}, "positive token"},
		{"ExtendNoTask", &store.LeaseExtendParams{Host: "h", Held: []store.LeaseHeld{{Token: 1}}}, "positive token"},
		{"Extend", &store.LeaseExtendParams{Host: "h", TTL: time.Second, Held: []store.LeaseHeld{{TaskID: "task_x", Token: 1}}}, ""},
		{"ReclaimNoHost", &store.TaskReclaimParams{}, "host is required"},
		{"ReclaimNegativeLimit", &store.TaskReclaimParams{Host: "h", Limit: -1}, "negative limit"},
		{"ReclaimNegativeKeyAge", &store.TaskReclaimParams{Host: "h", StaleKeysAfter: -1}, "negative limit"},
		{"Reclaim", &store.TaskReclaimParams{Host: "h", StaleKeysAfter: time.Hour}, ""},
		{"TransitionNegativeToken", &store.TaskTransitionParams{
			ID: "task_x", From: []store.Status{store.StatusRunning}, To: store.StatusCompleted, Lease: -1,
		}, "negative lease token"},
		{"CheckpointNegativeToken", &store.TaskCheckpointParams{ID: "task_x", Checkpoint: store.Payload{Codec: "avro"}, Lease: -1}, "negative lease token"},
		{"AppendNegativeToken", &store.EventAppendParams{TaskID: "task_x", Events: []store.EventDraft{{Type: "x"}}, Lease: -2}, "negative lease token"},
		{"CommitFoldWithLease", &store.WorkflowCommitParams{
			ID: "task_x", To: store.StatusCompleted, Lease: 1,
			EndChild: &store.TaskTransitionParams{ID: "task_y", From: []store.Status{store.StatusRunning}, To: store.StatusCompleted},
		}, "holds no lease"},
	})
}

func TestCheckLease(t *testing.T) {
	held := &store.Task{ID: "task_x", Lease: store.Lease{Host: "h", Token: 3, ExpiresAt: time.Now()}}
	released := &store.Task{ID: "task_x", Lease: store.Lease{Token: 3}}
	for _, c := range []struct {
		task  *store.Task
		token int64
		ok    bool
	}{
		{held, 0, true},
		{held, 3, true},
		{held, 2, false},
		{held, 4, false},
		{released, 0, true},
		{released, 3, false},
	} {
		err := store.CheckLease(c.task, c.token)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, store.ErrLeaseLost)) {
			t.Errorf("CheckLease(%+v, %d) = %v, want ok=%v", c.task.Lease, c.token, err, c.ok)
		}
	}
}
