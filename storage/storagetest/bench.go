package storagetest

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/benchbody"
	"github.com/hookverify/hookverify/storage"
)

// benchDeliveries creates the benchmarks' endpoint in s and returns a maker of its deliveries:
// the bench command's 2 KiB JSON body (text that PostgreSQL compresses about as much as a real
// payload; before the twenty-first session it was one letter repeated, which flattered
// PostgreSQL's figures) and three headers.
func benchDeliveries(b *testing.B, s storage.Store) func(eventID, inboxID string) storage.Delivery {
	e := newEndpoint("bench")
	if err := s.CreateEndpoint(b.Context(), e); err != nil {
		b.Fatal(err)
	}
	body := benchbody.JSON(2048, false)
	return func(eventID, inboxID string) storage.Delivery {
		d := newDelivery(e.ID, e.DedupeScope, eventID, inboxID)
		d.Body = body
		return d
	}
}

// BenchmarkClaims measures the claim path of the store s: new events (with numbered and with
// random ids) and redeliveries, each from one caller at a time (every claim its own commit)
// and from 32 concurrent callers (group commit shares commits between them). Deliveries carry
// a 2 KiB body and three headers, like the bench command's. The store must be empty; the
// benchmark creates its endpoint.
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
		// Real event ids are random: each claim then goes to its own page of the claims
		// index, where numbered ones share the last (BENCHMARKS.md, eleventh session).
		{"new-random-id", func() string { return fmt.Sprintf("evt_%016x%016x", rand.Uint64(), rand.Uint64()) }, true},
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

// inboxFiller creates the benchmarks' endpoint in s and returns a function that claims n
// new deliveries to it, 32 concurrent claims at a time.
func inboxFiller(b *testing.B, s storage.Store) func(n int) {
	deliver := benchDeliveries(b, s)
	var seq atomic.Int64
	return func(n int) {
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
}

// BenchmarkLeaseAck measures the worker path of the store s: each iteration leases 10
// deliveries and acks each in its own call, as a worker does, so one iteration is 11
// transactions; the time per delivery is reported as ns/delivery. It runs with one worker and
// with 8 at once, and with one worker leasing by endpoint. A backlog of 10,000 pending 2 KiB
// deliveries waits behind the ones leased, as when workers catch up after an outage: a lease
// must not cost more as the backlog grows. Last, "empty-endpoint" leases (ns/op per lease)
// for an endpoint with nothing waiting, while the backlog waits for another.
// The inbox is filled before each timed run, 32 concurrent claims at a time. The store must
// be empty; the benchmark creates its endpoint.
func BenchmarkLeaseAck(b *testing.B, s storage.Store) {
	fill := inboxFiller(b, s)
	const (
		perLease = 10
		backlog  = 10000
	)
	now := at(time.Hour)
	var tokens atomic.Int64
	// leaseAndAck reports rather than stops: RunParallel's goroutines may not call FailNow.
	leaseAndAck := func(b *testing.B, filter storage.InboxFilter) bool {
		token := fmt.Sprintf("tok-%d", tokens.Add(1))
		req := leaseReq(token, now, perLease)
		req.InboxFilter = filter
		res, err := s.Lease(b.Context(), req)
		if err != nil {
			b.Error(err)
			return false
		}
		if len(res.Deliveries) != perLease {
			b.Errorf("lease %s: got %d deliveries, want %d", token, len(res.Deliveries), perLease)
			return false
		}
		for _, d := range res.Deliveries {
			if err := s.Ack(b.Context(), d.InboxID, token, now); err != nil {
				b.Error(err)
				return false
			}
		}
		return true
	}
	pending := 0 // deliveries the runs so far left waiting
	for _, run := range []struct {
		name    string
		workers int
		filter  storage.InboxFilter
	}{
		{"1-workers", 1, storage.InboxFilter{}},
		{"8-workers", 8, storage.InboxFilter{}},
		// Leasing by endpoint, as workers of one endpoint do.
		{"1-workers-by-endpoint", 1, storage.InboxFilter{EndpointIDs: []string{"bench"}}},
	} {
		workers := run.workers
		b.Run(run.name, func(b *testing.B) {
			if need := b.N*perLease + backlog; pending < need {
				fill(need - pending)
				pending = need
			}
			b.ReportAllocs()
			b.ResetTimer()
			if workers == 1 {
				for range b.N {
					if !leaseAndAck(b, run.filter) {
						return
					}
				}
			} else {
				// RunParallel starts parallelism × GOMAXPROCS goroutines.
				b.SetParallelism(max(1, workers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if !leaseAndAck(b, run.filter) {
							return
						}
					}
				})
			}
			b.StopTimer()
			pending -= b.N * perLease
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perLease), "ns/delivery")
		})
	}
	// A worker of an endpoint with nothing waiting, while the backlog waits for another.
	b.Run("empty-endpoint", func(b *testing.B) {
		if pending < backlog {
			fill(backlog - pending)
			pending = backlog
		}
		req := leaseReq("tok-idle", now, perLease)
		req.EndpointIDs = []string{"idle"}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			res, err := s.Lease(b.Context(), req)
			if err != nil || len(res.Deliveries) != 0 {
				b.Fatalf("lease of an idle endpoint: %d deliveries, %v", len(res.Deliveries), err)
			}
		}
	})
}

// BenchmarkAcks measures acks alone: 8 workers ack deliveries leased before the clock started,
// each ack its own call, as workers that finish their deliveries at the same time do
// ("8-workers"), or each ten at a time with AckMany, as a worker acks a lease of ten
// ("8-workers-ack-many-10"). Either way the time is per delivery. The store must be empty;
// the benchmark creates its endpoint.
func BenchmarkAcks(b *testing.B, s storage.Store) {
	fill := inboxFiller(b, s)
	const workers, perCall = 8, 10
	now := at(time.Hour)
	round := 0
	for _, many := range []bool{false, true} {
		name := fmt.Sprintf("%d-workers", workers)
		if many {
			name += fmt.Sprintf("-ack-many-%d", perCall)
		}
		b.Run(name, func(b *testing.B) {
			round++
			token := fmt.Sprintf("tok-%d", round)
			fill(b.N)
			var leased []storage.LeasedDelivery
			for len(leased) < b.N {
				res, err := s.Lease(b.Context(), leaseReq(token, now, min(500, b.N-len(leased))))
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Deliveries) == 0 {
					b.Fatalf("leased %d deliveries, want %d", len(leased), b.N)
				}
				leased = append(leased, res.Deliveries...)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					if !many {
						for i := w; i < len(leased); i += workers {
							if err := s.Ack(b.Context(), leased[i].InboxID, token, now); err != nil {
								b.Error(err)
								return
							}
						}
						return
					}
					for first := w * perCall; first < len(leased); first += workers * perCall {
						refs := make([]storage.LeaseRef, 0, perCall)
						for _, d := range leased[first:min(first+perCall, len(leased))] {
							refs = append(refs, storage.LeaseRef{InboxID: d.InboxID, LeaseToken: token})
						}
						for _, err := range s.AckMany(b.Context(), refs, now) {
							if err != nil {
								b.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
