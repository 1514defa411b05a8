//go:build unix

package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// TestE2EMemoryLimit runs testkit's grow, which allocates until memory runs
// out, under a per-task memory limit over the real binary: the task fails
// with memory_limit, and the limit is part of the task document.
func TestE2EMemoryLimit(t *testing.T) {
	t.Parallel()
	d := MustRunMain(t)
	d.MustDeployTestkit()

	req := taskRequest(t, "grow", "null", "")
	req["memory_limit_bytes"] = 16 << 20
	var created client.Task
	var doc struct {
		MemoryLimitBytes int64 `json:"memory_limit_bytes"`
	}
	require.Equal(t, http.StatusAccepted, d.MustDo(http.MethodPost, "/v1/tasks", req, &created))
	d.MustDo(http.MethodGet, "/v1/tasks/"+created.ID, nil, &doc)
	require.Equal(t, int64(16<<20), doc.MemoryLimitBytes)

	done := d.MustWaitStatus(created.ID, 60*time.Second, "failed")
	require.NotNil(t, done.Error)
	require.Equal(t, "memory_limit", done.Error.Code, done.Error.Message)

	// The daemon goes on serving.
	echo := d.MustSubmit("echo", `{"after":"grow"}`, "")
	require.JSONEq(t, `{"after":"grow"}`, string(d.MustWaitStatus(echo.ID, 30*time.Second, "completed").Output))

	// A limit beyond what 32-bit memory can address is refused up front.
	bad := taskRequest(t, "grow", "null", "")
	bad["memory_limit_bytes"] = int64(8) << 30
	code, err := d.Do(t.Context(), http.MethodPost, "/v1/tasks", bad, nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.ErrorContains(t, err, `"param":"memory_limit_bytes"`)
}
