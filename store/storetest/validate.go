package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testValidate checks that every method with a params struct refuses params
// that their Validate method refuses, with ErrInvalid, and writes nothing.
func testValidate(t *testing.T, newStore func(testing.TB) store.Store) {
	s := newStore(t)
	ctx := t.Context()
	future := time.Now().Add(time.Hour)
	running := []store.Status{store.StatusRunning}
	negative := int64(-1)
	task := func(mod func(*store.TaskInsertParams)) *store.TaskInsertParams {
		p := &store.TaskInsertParams{Module: "echo", ModuleDigest: Digest, Function: "echo"}
		mod(p)
		return p
	}
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"ServiceInit/NegativeRetention", func(ctx context.Context) error {
			_, err := s.ServiceInit(ctx, &store.ServiceInitParams{RetentionPeriod: -time.Second})
			return err
		}},
		{"ServiceInit/BadAdminClient", func(ctx context.Context) error {
			_, err := s.ServiceInit(ctx, &store.ServiceInitParams{AdminClient: &store.ClientInsertParams{Name: "admin"}})
			return err
		}},
		{"ServiceUpdate/NegativeTTL", func(ctx context.Context) error {
			_, err := s.ServiceUpdate(ctx, &store.ServiceUpdateParams{IdempotencyKeyTTL: -time.Second})
			return err
		}},
		{"ClientInsert/NoName", func(ctx context.Context) error {
			_, err := s.ClientInsert(ctx, &store.ClientInsertParams{TokenHash: hash("t")})
			return err
		}},
		{"ClientInsert/NoTokenHash", func(ctx context.Context) error {
			_, err := s.ClientInsert(ctx, &store.ClientInsertParams{Name: "laptop"})
			return err
		}},
		{"ClientUpdate/NegativeLimit", func(ctx context.Context) error {
			_, err := s.ClientUpdate(ctx, &store.ClientUpdateParams{ID: store.NewID(store.ClientIDPrefix), MaxMemoryLimit: &negative})
			return err
		}},
		{"PairingInsert/NoExpiry", func(ctx context.Context) error {
			_, err := s.PairingInsert(ctx, &store.PairingInsertParams{CodeHash: hash("c")})
			return err
		}},
		{"PairingRedeem/NoCodeHash", func(ctx context.Context) error {
			_, err := s.PairingRedeem(ctx, &store.PairingRedeemParams{ClientName: "x", TokenHash: hash("t")})
			return err
		}},
		{"PairingRedeem/NoClientName", func(ctx context.Context) error {
			_, err := s.PairingRedeem(ctx, &store.PairingRedeemParams{CodeHash: hash("c"), TokenHash: hash("t")})
			return err
		}},
		{"ModuleInsert/BadName", func(ctx context.Context) error {
			_, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "-echo", Digest: Digest, Size: 1})
			return err
		}},
		{"ModuleInsert/BadDigest", func(ctx context.Context) error {
			_, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "echo", Digest: "sha256:ABC", Size: 1})
			return err
		}},
		{"ModuleInsert/NoSize", func(ctx context.Context) error {
			_, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{Name: "echo", Digest: Digest})
			return err
		}},
		{"ModuleInsert/BadFunction", func(ctx context.Context) error {
			_, err := s.ModuleInsert(ctx, &store.ModuleInsertParams{
				Name: "echo", Digest: Digest, Size: 1,
				Functions: []store.Function{{Name: "f", Kind: "daemon"}},
			})
			return err
		}},
		{"TaskInsert/NoModule", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.Module = "" }))
			return err
		}},
		{"TaskInsert/BadDigest", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.ModuleDigest = "sha256:0" }))
			return err
		}},
		{"TaskInsert/BadID", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.ID = "task_nope" }))
			return err
		}},
		{"TaskInsert/UnknownKind", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.Kind = "daemon" }))
			return err
		}},
		{"TaskInsert/NegativeTimeout", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.Timeout = -time.Second }))
			return err
		}},
		{"TaskInsert/ParentEventsWithoutParent", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.ParentEvents = []store.EventDraft{{Type: "x"}} }))
			return err
		}},
		{"TaskInsert/KeyCompletedAndBound", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) {
				p.Idempotency = &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k", StatusCode: 202}
				p.IdempotencyTask = &store.IdempotencyKeyRef{ClientID: "cli_a", Key: "k"}
			}))
			return err
		}},
		{"TaskInsert/BoundKeyWithoutClient", func(ctx context.Context) error {
			_, err := s.TaskInsert(ctx, task(func(p *store.TaskInsertParams) { p.IdempotencyTask = &store.IdempotencyKeyRef{Key: "k"} }))
			return err
		}},
		{"TaskList/UnknownStatus", func(ctx context.Context) error {
			_, err := s.TaskList(ctx, &store.TaskListParams{Statuses: []store.Status{"sleeping"}})
			return err
		}},
		{"TaskTransition/NoTransition", func(ctx context.Context) error {
			_, err := s.TaskTransition(ctx, &store.TaskTransitionParams{
				ID:   store.NewID(store.TaskIDPrefix),
				From: []store.Status{store.StatusCompleted}, To: store.StatusRunning,
			})
			return err
		}},
		{"TaskCheckpoint/NoCheckpoint", func(ctx context.Context) error {
			_, err := s.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: store.NewID(store.TaskIDPrefix)})
			return err
		}},
		{"WorkflowCommit/NoID", func(ctx context.Context) error {
			_, err := s.WorkflowCommit(ctx, &store.WorkflowCommitParams{Wait: true})
			return err
		}},
		{"WorkflowChildEnd/NotTerminal", func(ctx context.Context) error {
			_, err := s.WorkflowChildEnd(ctx, &store.TaskTransitionParams{
				ID:   store.NewID(store.TaskIDPrefix),
				From: running, To: store.StatusQueued,
			})
			return err
		}},
		{"WorkflowResume/EmptyID", func(ctx context.Context) error {
			return s.WorkflowResume(ctx, &store.WorkflowResumeParams{IDs: []string{""}})
		}},
		{"EventAppend/NotJSON", func(ctx context.Context) error {
			_, err := s.EventAppend(ctx, &store.EventAppendParams{
				TaskID: store.NewID(store.TaskIDPrefix),
				Events: []store.EventDraft{{Type: store.EventLog, Payload: json.RawMessage("{")}},
			})
			return err
		}},
		{"IdempotencyKeyBegin/NoDigest", func(ctx context.Context) error {
			_, err := s.IdempotencyKeyBegin(ctx, &store.IdempotencyKeyBeginParams{ClientID: "cli_a", Key: "k", ExpiresAt: future})
			return err
		}},
		{"IdempotencyKeyComplete/NoStatus", func(ctx context.Context) error {
			return s.IdempotencyKeyComplete(ctx, &store.IdempotencyKeyCompleteParams{ClientID: "cli_a", Key: "k"})
		}},
		{"IdempotencyKeyRelease/NoKey", func(ctx context.Context) error {
			return s.IdempotencyKeyRelease(ctx, &store.IdempotencyKeyReleaseParams{ClientID: "cli_a"})
		}},
		{"RetentionPurge/NoCutoff", func(ctx context.Context) error {
			_, err := s.RetentionPurge(ctx, &store.RetentionPurgeParams{})
			return err
		}},
		{"RetentionPurge/NegativeBatch", func(ctx context.Context) error {
			_, err := s.RetentionPurge(ctx, &store.RetentionPurgeParams{OlderThan: future, Batch: -1})
			return err
		}},
	}
	for _, c := range calls {
		require.ErrorIs(t, c.call(ctx), store.ErrInvalid, c.name)
	}

	// None of the refused calls wrote anything.
	_, err := s.ServiceGet(ctx)
	require.ErrorIs(t, err, store.ErrNotFound, "no service identity")
	clients, err := s.ClientList(ctx)
	require.NoError(t, err)
	require.Empty(t, clients, "no client")
	modules, err := s.ModuleList(ctx)
	require.NoError(t, err)
	require.Empty(t, modules, "no module")
	tasks, err := s.TaskList(ctx, &store.TaskListParams{})
	require.NoError(t, err)
	require.Empty(t, tasks, "no task")
}
