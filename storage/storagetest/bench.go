package storagetest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// benchDeliveries creates the benchmarks' endpoint in s and returns a maker of its deliveries:
// a 2 KiB JSON body and three headers, like the bench command's.
func benchDeliveries(b *testing.B, s storage.Store) func(eventID, inboxID string) storage.Delivery {
	e := newEndpoint("bench")
	if err := s.CreateEndpoint(b.Context(), e); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"bench":"` + strings.Repeat("x", 2048-13) + `"}`)
	return func(eventID, inboxID string) storage.Delivery {
		d := newDelivery(e.ID, e.DedupeScope, eventID, inboxID)
		d.Body = body
		return d
	}
}

// BenchmarkClaims measures the claim path of the store s: new events and redeliveries, each
// from one caller at a time (every claim its own commit) and from 32 concurrent callers (group
// commit shares commits between them). Deliveries carry a 2 KiB body and three headers, like
// the bench command's. The store must be empty; the benchmark creates its endpoint.
func BenchmarkClaims(b *testing.B, s storage.Store) {
	var seq atomic.Int64
	newBenchDelivery := benchDeliveries(b, s)
	deliver := func(eventID string) storage.Delivery {
		return newBenchDelivery(eventID, fmt.Sprintf("inbox-%d", seq.Add(1)))
	}
	const known = 64
	for i := range known {
		if _, err := s.Claim(b.Context(), deliver(fmt.Sprintf("known-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	kinds := []struct {
		name     string
		eventID  func() string
		accepted bool
	}{
		{"new", func() string { return fmt.Sprintf("new-%d", seq.Add(1)) }, true},
		{"duplicate", func() string { return fmt.Sprintf("known-%d", seq.Add(1)%known) }, false},
	}
	for _, kind := range kinds {
		// claimOne reports rather than stops: RunParallel's goroutines may not call FailNow.
		claimOne := func(b *testing.B) bool {
			r, err := s.Claim(b.Context(), deliver(kind.eventID()))
			if err != nil {
				b.Error(err)
				return false
			}
			if r.Accepted != kind.accepted {
				b.Errorf("claim accepted %v, want %v", r.Accepted, kind.accepted)
				return false
			}
			return true
		}
		b.Run(kind.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !claimOne(b) {
					return
				}
			}
		})
		b.Run(kind.name+"/32-callers", func(b *testing.B) {
			b.ReportAllocs()
			// RunParallel starts parallelism × GOMAXPROCS goroutines.
			b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !claimOne(b) {
						return
					}
				}
			})
		})
	}
}

// BenchmarkLeaseAck measures the worker path of the store s: each iteration leases up to 10
// deliveries and acks each in its own call, as a worker does, so one iteration is 11
// transactions; the time per delivery is reported as ns/delivery. The inbox is filled with
// 2 KiB deliveries between timed stretches, 32 concurrent claims at a time. The store must be
// empty; the benchmark creates its endpoint.
func BenchmarkLeaseAck(b *testing.B, s storage.Store) {
	deliver := benchDeliveries(b, s)
	var seq atomic.Int64
	fill := func(n int) {
		var wg sync.WaitGroup
		var failed atomic.Value
		for w := range 32 {
			wg.Go(func() {
				for i := w; i < n; i += 32 {
					id := seq.Add(1)
					d := deliver(fmt.Sprintf("evt-%d", id), fmt.Sprintf("inbox-%012d", id))
					if _, err := s.Claim(b.Context(), d); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	}
	const perLease = 10
	now := at(time.Hour)
	delivered := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		if i%100 == 0 {
			fill(100 * perLease)
		}
		b.StartTimer()
		res, err := s.Lease(b.Context(), leaseReq(fmt.Sprintf("tok-%d", i), now, perLease))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Deliveries) != perLease {
			b.Fatalf("lease %d: got %d deliveries, want %d", i, len(res.Deliveries), perLease)
		}
		for _, d := range res.Deliveries {
			if err := s.Ack(b.Context(), d.InboxID, fmt.Sprintf("tok-%d", i), now); err != nil {
				b.Fatal(err)
			}
		}
		delivered += len(res.Deliveries)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(delivered, 1)), "ns/delivery")
}
