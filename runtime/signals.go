package runtime

import (
	"context"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/journal"
)

// admitSignal checks that workflow id may take one more pending signal of
// size bytes (Config.MaxPendingSignals, MaxPendingSignalBytes); ps is held.
// It reads the journal once, the first time.
func (e *Engine) admitSignal(ctx context.Context, ps *journal.Pending, id string, size int64) error {
	if !ps.Loaded() {
		t, err := e.store.TaskGet(ctx, id)
		if err != nil {
			return fault.Wrap("get task", err)
		}
		j, err := journal.Read(ctx, e.store, t)
		if err != nil {
			return fault.Wrap("read journal", err)
		}
		ps.Settle(j)
	}
	n, b := ps.Totals()
	if n+1 > e.cfg.MaxPendingSignals {
		return fault.Errorf(fault.SignalLimitExceeded, "task %s holds %d signals that no wait consumed yet, the most it may; retry once it consumed some", id, n)
	}
	if b+size > e.cfg.MaxPendingSignalBytes {
		return fault.Errorf(fault.SignalLimitExceeded, "task %s holds %d bytes of signals that no wait consumed yet; this one would pass the limit of %d bytes", id, b, e.cfg.MaxPendingSignalBytes)
	}
	return nil
}
