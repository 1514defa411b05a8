package enginetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
)

// testMany (long): many tasks and workflows at once, with a restart in the
// middle, all end as they should with whole logs.
func testMany(t *testing.T, h *Harness) {
	v := newEnv(t, h, nil)
	var echoes, flows []*store.Task
	for i := range 200 {
		echoes = append(echoes, v.create(modActivities, "echo", fmt.Sprint(i), nil))
		if i%10 == 0 {
			flows = append(flows, v.create(modWorkflows, "fanout", `["x","y","z"]`, nil))
		}
	}
	v.restart()
	for _, task := range echoes {
		done := v.wait(task.ID)
		require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
		v.checkLog(done)
	}
	for _, task := range flows {
		done := v.wait(task.ID)
		require.Equal(t, store.StatusCompleted, done.Status, "%+v", done.Error)
		var out []string
		require.NoError(t, json.Unmarshal([]byte(projection(t, done.Output)), &out))
		require.Equal(t, []string{"X!", "Y!", "Z!"}, out[1:])
		v.checkLog(done)
	}
}
