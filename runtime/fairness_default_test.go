package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultClientWorkers(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 1, 4: 3, 8: 7, 16: 14, 20: 18, 128: 112} {
		require.Equal(t, want, DefaultClientWorkers(n), "workers %d", n)
	}
}
