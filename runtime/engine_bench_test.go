package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// BenchmarkEchoTasks measures tasks per second from creation to completed
// for echo tasks submitted by 32 concurrent clients, with durable commits
// (synchronous=FULL) on a real SQLite file.
func BenchmarkEchoTasks(b *testing.B) {
	for _, workers := range []int{64, 128, 256} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e, _ := setup(b, echo, func(c *Config) { c.Workers = workers })
			in := mustEnvelope(b, codec.String("ping"))
			const clients = 32
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					owner := fmt.Sprintf("cli_%02d", c)
					for next.Add(1) <= int64(b.N) {
						_, err := e.TaskCreate(context.Background(), &TaskCreateParams{
							ClientID: owner, Module: "test", Function: "echo", Input: in,
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			// Wait until no task is unfinished (an index seek, cheap enough
			// to repeat often without slowing the engine down).
			for {
				left, err := e.store.TaskList(context.Background(), &store.TaskListParams{
					Statuses: []store.Status{store.StatusQueued, store.StatusLoading, store.StatusRunning}, Limit: 1,
				})
				require.NoError(b, err)
				if len(left) == 0 {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			counts, err := e.store.TaskCount(context.Background())
			require.NoError(b, err)
			require.Equal(b, b.N, counts[store.StatusCompleted])
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
		})
	}
}
