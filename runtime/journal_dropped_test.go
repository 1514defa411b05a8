package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/runtime/journal"
	"github.com/weft-run/weft/store"
)

// TestJournalDroppedLines: the journal tells a plugin's line from the count
// of dropped lines by the count's field, not by the text of the payload. A
// line whose message is "dropped", or quotes it, is a line: counted once,
// by the journal a run keeps and by one read again from the log, so a
// replay neither logs it again nor swallows the line after it.
func TestJournalDroppedLines(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		name := "Cached"
		if restart {
			name = "ReadAgain"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := testGuest()
			g.workflows["quoting"] = func(w *wf, _ codec.Value) (codec.Value, error) {
				w.log("info", "dropped")
				w.log("info", `the "dropped" field`)
				w.must(w.signal("go", -1))
				w.log("info", "after the signal")
				w.must(w.signal("end", -1))
				w.log("info", "done")
				return codec.Null(), nil
			}
			e, b := wfSetup(t, g, nil)
			task := start(t, e, "quoting", codec.Null(), store.OnRestartResume)
			waitJournal(t, e, task.ID, journal.EventSignalWaiting, 1)
			if restart {
				e = b.reopen(t, e)
			}
			signal(t, e, task.ID, "go", codec.Null())
			waitJournal(t, e, task.ID, journal.EventSignalWaiting, 2)
			var freshLogged, cachedLogged int
			require.Eventually(t, func() bool {
				cur, err := e.store.TaskGet(t.Context(), task.ID)
				if err != nil {
					return false
				}
				cached := e.jcache.Take(task.ID, 1)
				if cached == nil {
					return false
				}
				defer e.jcache.Put(cached)
				if cached.LastSeq() != cur.LastSeq {
					return false
				}
				fresh, err := journal.Read(t.Context(), e.store, cur)
				if err != nil {
					return false
				}
				freshLogged, cachedLogged = fresh.Logged(), cached.Logged()
				return true
			}, 10*time.Second, 5*time.Millisecond, "the run's journal is cached")
			require.Equal(t, 3, freshLogged, "the log holds three lines")
			require.Equal(t, freshLogged, cachedLogged, "the cached journal counts as the log does")
			signal(t, e, task.ID, "end", codec.Null())
			require.Equal(t, store.StatusCompleted, mustFinish(t, e, task.ID).Status)
			var lines []string
			for _, ev := range allEvents(t, e, task.ID) {
				if ev.Type != EventLog {
					continue
				}
				var l struct {
					Message string `json:"message"`
				}
				require.NoError(t, json.Unmarshal(ev.Payload, &l))
				lines = append(lines, l.Message)
			}
			require.Equal(t, []string{"dropped", `the "dropped" field`, "after the signal", "done"}, lines)
		})
	}
}
