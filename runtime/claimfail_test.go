package runtime

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// refusingClaims is a store whose TaskClaim fails while refuse is set, as
// a store on a full disk or a database that went down.
type refusingClaims struct {
	store.Store
	refuse  atomic.Bool
	refused atomic.Int64
}

func (s *refusingClaims) TaskClaim(ctx context.Context, p *store.TaskClaimParams) ([]*store.Task, error) {
	if s.refuse.Load() {
		s.refused.Add(1)
		return nil, errors.New("disk I/O error")
	}
	return s.Store.TaskClaim(ctx, p)
}

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines(substr string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// TestClaimRefusalsLogOnce keeps the store refusing claims while the
// scheduler tries again dozens of times: the log holds one line for the
// refusal and one for the recovery, not one per try, the engine is not
// ready meanwhile, and a task created during the refusal completes once
// claims succeed again.
func TestClaimRefusalsLogOnce(t *testing.T) {
	logs := &lockedBuffer{}
	wrapped := &refusingClaims{}
	wrapped.refuse.Store(true)
	e, b := setup(t, echo, func(c *Config) {
		wrapped.Store = c.Store
		c.Store = wrapped
		c.Workers = 1
		c.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: logs})
		c.StoreRetry = StoreRetry{MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}
	})
	require.Eventually(t, func() bool { return wrapped.refused.Load() >= 30 }, 10*time.Second, time.Millisecond,
		"the scheduler tries again after a refusal")
	require.ErrorContains(t, e.StoreError(), "the store refuses to claim tasks")

	in := codec.EnvelopeOf(mustFrame(t, codec.String("during the refusal")))
	task, err := e.TaskCreate(t.Context(), &TaskCreateParams{ClientID: "cli_admin", Module: "test", Function: "echo", Input: in})
	require.NoError(t, err)

	wrapped.refuse.Store(false)
	require.Eventually(t, func() bool { return len(logs.lines("accepts claims again")) == 1 }, 10*time.Second, time.Millisecond)
	got, err := e.TaskWait(t.Context(), b.admin, task.ID)
	require.NoError(t, err)
	require.Equal(t, store.StatusCompleted, got.Status)
	require.NoError(t, e.StoreError())

	claimLines := logs.lines("claim tasks")
	require.Len(t, claimLines, 2, "one line for the refusal, one for the recovery, after %d refusals:\n%s",
		wrapped.refused.Load(), strings.Join(claimLines, "\n"))
	require.Contains(t, claimLines[0], "disk I/O error")
}
