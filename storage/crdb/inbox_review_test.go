package crdb

import (
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestImpossibleAcksOnCockroachDBPaths: on CockroachDB's path (one UPDATE for the batch's
// acks), an ack naming an id or token that holds NUL, which no stored row can, fails alone as
// one that matches nothing, and the acks beside it go through (storagetest checks the
// PostgreSQL path).
func TestImpossibleAcksOnCockroachDBPaths(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := migratedCockroachPathStore(t, url)
	if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	mustClaim(t, s, delivery("evt-2", "inbox-2"), true)
	now := base.Add(time.Minute)
	req := storage.LeaseRequest{Max: 2, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok-1", Now: now,
		InboxFilter: storage.InboxFilter{EndpointIDs: []string{"ep-1", "ep\x00"}}}
	if leased, err := leaseDeliveries(t, s, req); err != nil || len(leased) != 2 {
		t.Fatalf("Lease with an impossible endpoint beside ep-1 = %+v, %v; want both deliveries", leased, err)
	}
	errs := s.AckMany(t.Context(), []storage.LeaseRef{
		{InboxID: "inbox-1", LeaseToken: "tok-1"},
		{InboxID: "inbox-2", LeaseToken: "tok\x00"},
		{InboxID: "inbox\x00", LeaseToken: "tok-1"},
	}, now)
	if errs[0] != nil || !errors.Is(errs[1], storage.ErrLeaseLost) || !errors.Is(errs[2], storage.ErrNotFound) {
		t.Fatalf("AckMany = %v; want nil, lease lost, not found", errs)
	}
	if _, err := s.Nack(t.Context(), "inbox-2", "tok-1", now, 3, "out\x00put", now); err != nil {
		t.Fatalf("Nack with NUL in its error: %v", err)
	}
}
