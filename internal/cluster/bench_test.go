package cluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/orchestrator"
)

// BenchmarkClaim_ThreeDaemonsCompeting: three daemons claim and release issues as fast
// as they can, all at once, each issue wanted by all three. Reports claims (granted or
// refused, each a transaction under the claim lock) per second.
func BenchmarkClaim_ThreeDaemonsCompeting(b *testing.B) {
	url, _ := db(b)
	cs := []*Cluster{join(b, url, "a"), join(b, url, "b"), join(b, url, "c")}
	var next, granted atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.SetParallelism(1) // GOMAXPROCS goroutines; they pick daemons round-robin
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := next.Add(1)
			c := cs[i%3]
			id := fmt.Sprint((i / 3) % 50)
			r, err := c.Claim(ctx, orchestrator.ClaimRequest{IssueID: id, Identifier: id, State: "Todo", ClusterCap: 30, StateCap: -1})
			if err != nil {
				b.Error(err)
				return
			}
			if r.OK {
				granted.Add(1)
				if err := c.Release(ctx, id); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
	b.ReportMetric(float64(granted.Load())/float64(b.N), "granted/claim")
}

// BenchmarkNotify_Latency: the time from one daemon's NOTIFY (an issue released, a
// new list published) to another daemon's refresh, the dispatch latency of new work
// in a cluster beyond the poll itself.
func BenchmarkNotify_Latency(b *testing.B) {
	url, _ := db(b)
	a, other := join(b, url, "a"), join(b, url, "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard := make(chan struct{}, 1)
	ready := make(chan struct{})
	go other.listen(ctx, func(string) { heard <- struct{}{} }, ready)
	<-ready
	b.ResetTimer()
	for b.Loop() {
		a.Changed(ctx, "poll")
		<-heard
	}
}
