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

func TestArenaSpare(t *testing.T) {
	t.Parallel()
	var a arena
	first := a.take(10)
	for i := range 200 {
		n := uint32(i * 97 % 3000)
		dst := a.spare()
		require.GreaterOrEqual(t, len(dst), arenaSpare)
		if int(n) > len(dst) {
			continue
		}
		for j := range n {
			dst[j] = byte(i)
		}
		b := a.claim(n)
		require.Len(t, b, int(n))
		require.Equal(t, len(b), cap(b))
		for _, c := range b {
			require.Equal(t, byte(i), c)
		}
	}
	require.Len(t, first, 10, "what was handed out stays")
	big := a.spare()
	n := uint32(len(big))
	require.Len(t, a.claim(n), int(n), "the whole free end may be claimed")
	require.GreaterOrEqual(t, len(a.spare()), arenaSpare, "a new chunk starts when the free end is short")
}
