package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestE2EDeployInvalidModule: a module the host rejects is 422
// module_invalid with the host's reason, for a deploy and for a deploy that
// first checks the replay of running workflows, which compiles the module
// through the same path.
func TestE2EDeployInvalidModule(t *testing.T) {
	d := MustRunMain(t)
	for _, path := range []string{"/v1/modules/junk", "/v1/modules/junk?check_replay=true"} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		code, err := d.Do(ctx, http.MethodPut, path, []byte("\x00asm\x01\x00\x00\x00\xff\xff"), nil)
		cancel()
		require.Error(t, err, path)
		require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %v", path, err)
		require.Contains(t, err.Error(), `"code":"module_invalid"`, path)
		require.Contains(t, err.Error(), "invalid_module: ", path)
	}
}
