package hostcall

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestArena(t *testing.T) {
	t.Parallel()
	var a arena
	var bufs [][]byte
	for i := range 3000 {
		b := a.take(uint32(i % 50))
		require.Len(t, b, i%50)
		require.Equal(t, len(b), cap(b), "an append must not run into the next buffer")
		for j := range b {
			b[j] = byte(i)
		}
		bufs = append(bufs, b)
	}
	for i, b := range bufs {
		for _, c := range b {
			require.Equal(t, byte(i), c, "buffer %d was handed out twice", i)
		}
	}
	big := a.take(arenaChunk)
	require.Len(t, big, arenaChunk)
	require.Equal(t, arenaChunk, cap(big))
}
