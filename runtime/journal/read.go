package journal

import (
	"context"
	"fmt"

	"github.com/weft-run/weft/store"
)

// Lister reads a task's log; store.Store satisfies it.
type Lister interface {
	// EventList returns events of a task's log in sequence order, as
	// store.Store.EventList does.
	EventList(ctx context.Context, p *store.EventListParams) ([]*store.Event, error)
}

// page is how many events one read of a journal takes from the store:
// events carry payloads, so a page is bounded in count.
const page = 256

// Read reads the whole log of workflow task t and builds the journal of its
// current attempt. It returns the store's error, store.ErrNotFound for a
// task that is gone, wrapped.
func Read(ctx context.Context, l Lister, t *store.Task) (*Journal, error) {
	j := New(t)
	if err := j.Extend(ctx, l); err != nil {
		return nil, err
	}
	return j, nil
}

// Extend applies the events of the task's log past LastSeq. After an error
// the journal must not be used.
func (j *Journal) Extend(ctx context.Context, l Lister) error {
	for from := j.lastSeq + 1; ; {
		evs, err := l.EventList(ctx, &store.EventListParams{TaskID: j.taskID, From: from, Limit: page})
		if err != nil {
			return fmt.Errorf("read journal: %w", err)
		}
		for _, ev := range evs {
			if err := j.Apply(ev); err != nil {
				return fmt.Errorf("read journal of %s: event %d (%s): %w", j.taskID, ev.Seq, ev.Type, err)
			}
		}
		if len(evs) < page {
			return nil
		}
		from = evs[len(evs)-1].Seq + 1
	}
}
