package sqlite_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestLeaseNamingThousandsOfScopes: a worker naming as many endpoints as are picked one at a
// time, and some thousands of scopes, leases what matches. Each of the pick's branches (two
// per endpoint) repeats the scopes, so bound one value per parameter they would pass SQLite's
// 32,766 and fail the lease, and every lease sharing its transaction, as UNAVAILABLE.
func TestLeaseNamingThousandsOfScopes(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx := t.Context()
	now := claimOneDelivery(t, s)
	endpoints := []string{"ep"}
	for i := 1; i < storage.MaxEndpointPicks; i++ {
		endpoints = append(endpoints, fmt.Sprintf("ep-none-%d", i))
	}
	scopes := []string{"ep"}
	for i := 1; i < 3000; i++ {
		scopes = append(scopes, fmt.Sprintf("scope-none-%d", i))
	}
	res, err := s.Lease(ctx, storage.LeaseRequest{Max: 10, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok", Now: now,
		InboxFilter: storage.InboxFilter{EndpointIDs: endpoints, Scopes: scopes}})
	if err != nil || len(res.Deliveries) != 1 || res.Deliveries[0].InboxID != "in-1" {
		t.Fatalf("Lease naming %d endpoints and %d scopes = %+v, %v; want in-1", len(endpoints), len(scopes), res, err)
	}
}

// TestNackToDeadRecordsWhenItDied: a delivery a nack moves to dead holds the time of that
// nack as its dead_at, not the retry time the worker asked for (which a dead delivery never
// reaches): dead_at is read only from the file, by whoever asks when a delivery died.
func TestNackToDeadRecordsWhenItDied(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	ctx := t.Context()
	now := claimOneDelivery(t, s)
	res, err := s.Lease(ctx, storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok", Now: now})
	if err != nil || len(res.Deliveries) != 1 {
		t.Fatalf("Lease = %+v, %v; want in-1", res, err)
	}
	nackAt, retryAt := now.Add(time.Second), now.Add(time.Hour)
	if dead, err := s.Nack(ctx, "in-1", "tok", retryAt, 1, "exit status 2", nackAt); err != nil || !dead {
		t.Fatalf("Nack = %v, %v; want dead", dead, err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var deadAt sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT dead_at FROM inbox WHERE id = 'in-1'`).Scan(&deadAt); err != nil {
		t.Fatal(err)
	}
	if !deadAt.Valid || deadAt.Int64 != nackAt.UnixMicro() {
		t.Fatalf("dead_at = %+v, want %d (the nack's time, not the retry time %d)", deadAt, nackAt.UnixMicro(), retryAt.UnixMicro())
	}
}
