package runtime

import (
	"context"
	"errors"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// eventPage is the number of events one store read of a subscription
// returns.
const eventPage = 1000

// EventList returns up to limit events of a task the caller may see, those
// with a sequence number above after (−1 for the whole log), in order. A
// limit of 0 or less means 1000; at most 10000. It returns fault.NotFound
// for a task the caller may not see.
func (e *Engine) EventList(ctx context.Context, who Caller, id string, after int64, limit int) ([]*store.Event, error) {
	if _, err := e.visibleTask(ctx, who, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = eventPage
	}
	evs, err := e.store.EventList(ctx, &store.EventListParams{TaskID: id, From: max(after+1, 0), Limit: min(limit, 10000)})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "task %q not found", id)
	case err != nil:
		return nil, fault.Wrap("list events", err)
	}
	return evs, nil
}

// EventSubscribe streams the log of a task the caller may see: first the
// stored events with a sequence number above after (−1 for the whole log),
// then each new event right after its commit, without polling. Every event
// arrives exactly once and in order: the subscription watches the log
// before it reads it, and it asks the store only for sequence numbers past
// the last one delivered.
//
// The channel is closed after the terminal event (response.completed,
// response.failed or response.cancelled), when ctx ends, or when the task
// disappears (retention) or the store fails; a consumer that saw no terminal
// event may subscribe again after the last sequence number it received. A
// slow consumer slows only its own subscription, never the task. It
// returns fault.NotFound for a task the caller may not see.
func (e *Engine) EventSubscribe(ctx context.Context, who Caller, id string, after int64) (<-chan *store.Event, error) {
	if _, err := e.visibleTask(ctx, who, id); err != nil {
		return nil, err
	}
	watch, stop := e.store.EventWatch(id)
	ch := make(chan *store.Event, 16)
	go func() {
		defer close(ch)
		defer stop()
		next := max(after+1, 0)
		for {
			evs, err := e.store.EventList(ctx, &store.EventListParams{TaskID: id, From: next, Limit: eventPage})
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, store.ErrNotFound) {
					e.log.Error("event subscription", "task_id", id, "error", err)
				}
				return
			}
			for _, ev := range evs {
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
				next = ev.Seq + 1
				if store.IsTerminalEvent(ev.Type) {
					return
				}
			}
			if len(evs) == eventPage {
				continue // more are stored already
			}
			if len(evs) == 0 {
				// Nothing past next: a finished task has nothing more to
				// send (a subscription that starts after the terminal event).
				t, err := e.store.TaskGet(ctx, id)
				if err != nil || (t.Status.IsTerminal() && next > t.LastSeq) {
					return
				}
			}
			select {
			case <-watch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
