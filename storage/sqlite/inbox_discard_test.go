package sqlite_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestDiscardKeepsTheLastErrorAfterItsReason: a discarded delivery's record says why it was
// given up, then what had failed ("discarded: ...; last error: ..."), for whoever reads it
// before the sweep removes it: the reason alone lost the worker's error, the only account of
// what went wrong with work that is now never run.
func TestDiscardKeepsTheLastErrorAfterItsReason(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	ctx := t.Context()
	now := claimOneDelivery(t, s)
	res, err := s.Lease(ctx, storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok", Now: now})
	if err != nil || len(res.Deliveries) != 1 {
		t.Fatalf("Lease = %+v, %v; want in-1", res, err)
	}
	if dead, err := s.Nack(ctx, "in-1", "tok", now, 1, "exit status 2", now); err != nil || !dead {
		t.Fatalf("Nack = %v, %v; want dead", dead, err)
	}
	if err := s.Discard(ctx, "in-1", "discarded: poison", now.Add(time.Second)); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var state, lastError string
	if err := db.QueryRowContext(ctx, `SELECT state, last_error FROM inbox WHERE id = 'in-1'`).Scan(&state, &lastError); err != nil {
		t.Fatal(err)
	}
	if want := "discarded: poison; last error: exit status 2"; state != storage.StateAcked || lastError != want {
		t.Fatalf("discarded record: state %q, last error %q; want %q, %q", state, lastError, storage.StateAcked, want)
	}
}

// claimOneDelivery creates endpoint "ep" and claims one delivery of it, inbox id "in-1", at the
// time it returns.
func claimOneDelivery(t *testing.T, s *sqlite.Store) time.Time {
	t.Helper()
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateEndpoint(ctx, storage.Endpoint{ID: "ep", Provider: "github", DedupeScope: "ep", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, storage.Delivery{InboxID: "in-1", Scope: "ep", EventID: "evt-1", EndpointID: "ep", OperationKey: "op-1",
		Method: "POST", URL: "https://example.com/ep", Body: []byte("{}"), ReceivedAt: now}); err != nil {
		t.Fatal(err)
	}
	return now
}
