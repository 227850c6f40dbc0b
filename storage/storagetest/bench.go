package storagetest

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// BenchmarkClaims measures the claim path of the store s: new events and redeliveries, each
// from one caller at a time (every claim its own commit) and from 32 concurrent callers (group
// commit shares commits between them). Deliveries carry a 2 KiB body and three headers, like
// the bench command's. The store must be empty; the benchmark creates its endpoint.
func BenchmarkClaims(b *testing.B, s storage.Store) {
	e := newEndpoint("bench")
	if err := s.CreateEndpoint(b.Context(), e); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"bench":"` + strings.Repeat("x", 2048-13) + `"}`)
	var seq atomic.Int64
	deliver := func(eventID string) storage.Delivery {
		d := newDelivery(e.ID, e.DedupeScope, eventID, fmt.Sprintf("inbox-%d", seq.Add(1)))
		d.Body = body
		return d
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
