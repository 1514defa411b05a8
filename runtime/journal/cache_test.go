package journal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The journal cache drops journals past its byte bound, oldest first, and
// never keeps one larger than the bound.
func TestJournalCacheBytes(t *testing.T) {
	var c Cache
	mk := func(id string, size int) *Journal {
		j := &Journal{taskID: id, attempt: 1, buffered: map[string][]signalMsg{"s": {{payload: make([]byte, size)}}}}
		return j
	}
	c.Put(mk("a", cacheBytes/2))
	c.Put(mk("b", cacheBytes/2))
	c.Put(mk("c", 1))
	require.Nil(t, c.Take("a", 1), "the oldest left to keep the bound")
	require.NotNil(t, c.Take("b", 1))
	c.Put(mk("huge", cacheBytes+1))
	require.Nil(t, c.Take("huge", 1))
	require.NotNil(t, c.Take("c", 1))
	require.Zero(t, c.bytes)
}
