package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// testkitCWasm is the C build of the stock test plugin.
var testkitCWasm = filepath.Join("..", "..", "plugins", "testkit-c", "testkit-c.wasm")

// e2eProgress is the progress field of a task document.
type e2eProgress struct {
	Done      int64  `json:"done"`
	Total     int64  `json:"total"`
	Message   string `json:"message"`
	UpdatedAt string `json:"updated_at"`
}

// TestE2EProgress runs testkit's count, which reports its progress at each
// checkpoint, on the real daemon with the default progress interval: the
// task document shows the progress while the task runs and the final one
// after; its log holds a bounded number of task.progress events, the last
// with done == total, all before the terminal event; weft tasks watch draws
// them as bars and weft tasks get shows the task's progress. The Go and the
// C testkit behave the same.
func TestE2EProgress(t *testing.T) {
	d := MustRunMain(t)
	for _, plugin := range []struct{ module, path string }{{"testkit", testkitWasm}, {"testkit-c", testkitCWasm}} {
		t.Run(plugin.module, func(t *testing.T) {
			wasm, err := os.ReadFile(plugin.path)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, d.MustDo(http.MethodPut, "/v1/modules/"+plugin.module, wasm, nil))

			// Each step is a durable checkpoint: counting to 6000 takes
			// about a second and a half, several progress intervals.
			const to = 6000
			req := taskRequest(t, "count", fmt.Sprintf(`{"to":%d,"checkpoint_every":1}`, to), "")
			req["module"] = plugin.module
			var created client.Task
			require.Equal(t, http.StatusAccepted, d.MustDo(http.MethodPost, "/v1/tasks", req, &created))
			id := created.ID

			// While it runs, the task shows how far it got.
			var live *e2eProgress
			deadline := time.Now().Add(30 * time.Second)
			for live == nil {
				var doc struct {
					Status   string       `json:"status"`
					Progress *e2eProgress `json:"progress"`
				}
				d.MustDo(http.MethodGet, "/v1/tasks/"+id, nil, &doc)
				switch {
				case doc.Status == "running" && doc.Progress != nil && doc.Progress.Done < to:
					live = doc.Progress
				case doc.Status != "running" && doc.Status != "queued" && doc.Status != "loading":
					t.Fatalf("task %s ended (%s) before its progress was seen while it ran", id, doc.Status)
				case time.Now().After(deadline):
					t.Fatalf("no progress on task %s after 30 s", id)
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.Equal(t, int64(to), live.Total)
			require.Equal(t, "counting", live.Message)

			watch := d.MustCLI("tasks", "watch", id)
			t.Logf("weft tasks watch %s:\n%s", id, watch)
			bar := regexp.MustCompile(`task\.progress\s+\d\d:\d\d:\d\d\.\d{3}  \[[#.]{24}\]\s+(\d+)/` + fmt.Sprint(to) + `\s+\d+%`)
			bars := bar.FindAllStringSubmatch(watch, -1)
			require.GreaterOrEqual(t, len(bars), 2, "progress lines in:\n%s", watch)
			require.Equal(t, fmt.Sprint(to), bars[len(bars)-1][1], "the last bar is full:\n%s", watch)
			require.Contains(t, watch, fmt.Sprintf("%d/%d 100%%", to, to))
			require.Contains(t, watch, "task "+id+" completed")

			var doc struct {
				Status     string       `json:"status"`
				StartedAt  time.Time    `json:"started_at"`
				FinishedAt time.Time    `json:"finished_at"`
				Progress   *e2eProgress `json:"progress"`
			}
			d.MustDo(http.MethodGet, "/v1/tasks/"+id, nil, &doc)
			require.Equal(t, "completed", doc.Status)
			require.NotNil(t, doc.Progress)
			require.Equal(t, int64(to), doc.Progress.Done)
			require.Equal(t, int64(to), doc.Progress.Total)
			require.Equal(t, "counting", doc.Progress.Message)
			updated, err := time.Parse(time.RFC3339Nano, doc.Progress.UpdatedAt)
			require.NoError(t, err)
			require.False(t, updated.After(doc.FinishedAt), "the final report is recorded before the end")

			events := d.MustEvents(id)
			require.Equal(t, "response.completed", events[len(events)-1].Type, "nothing follows the terminal event")
			var reports []map[string]any
			for _, e := range events {
				if e.Type != "task.progress" {
					continue
				}
				var p map[string]any
				require.NoError(t, json.Unmarshal(e.Data, &p))
				reports = append(reports, p)
			}
			last := reports[len(reports)-1]
			require.Equal(t, map[string]any{"done": float64(to), "total": float64(to), "message": "counting"}, last)
			for _, p := range reports[:len(reports)-1] {
				require.Less(t, p["done"], float64(to), "the final report is recorded once")
			}
			// 6000 reports coalesce into at most one event per 250 ms of
			// the call and the final one.
			ran := doc.FinishedAt.Sub(doc.StartedAt)
			require.LessOrEqual(t, len(reports), int(ran/(250*time.Millisecond))+2, "%d events in %s", len(reports), ran)
			t.Logf("%s: %d reports gave %d task.progress events in %s", plugin.module, to, len(reports), ran)

			// The list shows it too, and weft tasks get prints it.
			var list struct {
				Data []struct {
					ID       string       `json:"id"`
					Progress *e2eProgress `json:"progress"`
				} `json:"data"`
			}
			d.MustDo(http.MethodGet, "/v1/tasks?module="+plugin.module, nil, &list)
			require.Len(t, list.Data, 1)
			require.Equal(t, doc.Progress, list.Data[0].Progress)
			get := d.MustCLI("tasks", "get", id)
			require.Regexp(t, `(?m)^progress   \[#{24}\] `+fmt.Sprint(to)+`/`+fmt.Sprint(to)+` 100%  counting   \(at \d\d:\d\d:\d\d\.\d{3}\)$`, get)
			require.True(t, strings.Contains(get, "status     completed"), get)
		})
	}
}
