//go:build unix

package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkTakeover measures the takeover time after a SIGKILL with the
// default lease (--lease-ttl unset, 20 s): two real `weft serve`
// processes on one PostgreSQL database, eight long activities running on
// one of them, which is killed; the figure is the time from the kill to
// each task.recovered event the other host writes, whose median, minimum
// and maximum it reports over every task of every round. Each round takes
// about the lease.
//
//	WEFT_TEST_POSTGRES=… go test ./cmd/weft -run '^$' -bench Takeover -benchtime 3x
func BenchmarkTakeover(b *testing.B) {
	var took []time.Duration
	for b.Loop() {
		dsn := MustOwnedDatabase(b)
		hosts := MustRunHosts(b, 1, dsn)
		victim := hosts[0]
		victim.MustDeployTestkit()
		ids := make([]string, 8)
		for i := range ids {
			ids[i] = victim.mustCreate("testkit", "sleep", `{"ms":120000}`, "retry")
		}
		require.Eventually(b, func() bool {
			for _, id := range ids {
				if victim.mustHostOf(id).Status != "running" {
					return false
				}
			}
			return true
		}, 30*time.Second, 10*time.Millisecond, "the tasks never ran")
		// The survivor starts only now, so that every task is the victim's.
		survivor := MustJoinHost(b, victim, dsn, "host-2")
		victim.Kill()
		killed := time.Now()
		for _, id := range ids {
			require.Eventually(b, func() bool { return len(recovered(survivor.MustEvents(id))) > 0 },
				time.Minute, 20*time.Millisecond, "task %s was not taken over", id)
			took = append(took, recovered(survivor.MustEvents(id))[0].CreatedAt.Sub(killed))
		}
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "s_takeover_median")
	b.ReportMetric(took[0].Seconds(), "s_takeover_min")
	b.ReportMetric(took[len(took)-1].Seconds(), "s_takeover_max")
	b.ReportMetric(0, "ns/op")
}
