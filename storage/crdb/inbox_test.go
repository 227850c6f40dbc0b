package crdb

import (
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestInboxUpgradeKeepsDeliveriesLeasable migrates a database holding inbox records written
// before the delivery state existed (schema version 6): they become pending, visible since
// they were received.
func TestInboxUpgradeKeepsDeliveriesLeasable(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	conn := connect(t, url)
	exec(t, conn, createMigrationsTable)
	for _, m := range migrations {
		if m.version > 6 {
			break
		}
		exec(t, conn, m.sql)
		exec(t, conn, recordMigration, m.version, m.description)
	}
	old := delivery("evt-1", "inbox-1")
	exec(t, conn, `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		VALUES ($1, $2, $3, $4, $5)`, old.Scope, old.EventID, old.InboxID, old.OperationKey, old.ReceivedAt)
	exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url,
		headers, body, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		old.InboxID, old.Scope, old.EventID, old.EndpointID, old.OperationKey, old.SecretID, old.Method, old.URL,
		storage.EncodeHeaders(old.Headers), old.Body, old.ReceivedAt)

	s := open(t, url)
	wantAllMigrations(t, conn)
	stats, err := s.InboxStats(t.Context())
	if err != nil {
		t.Fatalf("InboxStats: %v", err)
	}
	if want := (storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: base}); len(stats) != 1 || stats[0] != want {
		t.Fatalf("InboxStats after the upgrade = %+v, want [%+v]", stats, want)
	}
	result, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 5, Visibility: time.Minute, MaxAttempts: 3,
		LeaseToken: "tok", Now: base})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	got := result.Deliveries
	if len(got) != 1 || got[0].InboxID != old.InboxID || got[0].Attempts != 1 || !got[0].VisibleAt.Equal(base) {
		t.Fatalf("Lease after the upgrade = %+v, want inbox-1 visible at %s, attempt 1", got, base)
	}
}

// TestInboxOnCockroachDBPaths runs the inbox through cockroach-go's ExecuteTx at SERIALIZABLE,
// the way it runs on CockroachDB, sequentially (see cockroachPathStore).
func TestInboxOnCockroachDBPaths(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := cockroachPathStore(t, url)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	second := delivery("evt-2", "inbox-2")
	second.ReceivedAt = base.Add(time.Second)
	mustClaim(t, s, second, true)

	now := base.Add(time.Minute)
	req := storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok-1", Now: now,
		InboxFilter: storage.InboxFilter{EndpointIDs: []string{"ep-1"}, Scopes: []string{"ep-1"}}}
	leased, err := leaseDeliveries(t, s, req)
	if err != nil || len(leased) != 1 || leased[0].InboxID != "inbox-1" {
		t.Fatalf("Lease = %+v, %v; want inbox-1", leased, err)
	}
	if err := s.ExtendLease(t.Context(), "inbox-1", "tok-1", now.Add(time.Hour), now); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	if err := s.Ack(t.Context(), "inbox-1", "tok-1", now); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := s.Ack(t.Context(), "inbox-1", "tok-1", now); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("second Ack: %v, want ErrLeaseLost", err)
	}
	if err := s.Ack(t.Context(), "inbox-9", "tok-1", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Ack of an unknown delivery: %v, want ErrNotFound", err)
	}

	req.LeaseToken = "tok-2"
	if leased, err = leaseDeliveries(t, s, req); err != nil || len(leased) != 1 || leased[0].InboxID != "inbox-2" {
		t.Fatalf("second Lease = %+v, %v; want inbox-2", leased, err)
	}
	if dead, err := s.Nack(t.Context(), "inbox-2", "tok-2", now, 1, "boom", now); err != nil || !dead {
		t.Fatalf("Nack = %v, %v; want dead", dead, err)
	}
	letters, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, 10)
	if err != nil || len(letters) != 1 || letters[0].LastError != "boom" {
		t.Fatalf("ListDeadLetters = %+v, %v; want inbox-2 with its error", letters, err)
	}
	if err := s.Requeue(t.Context(), "inbox-2", now); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	if err := s.Requeue(t.Context(), "inbox-2", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second Requeue: %v, want ErrNotFound", err)
	}
	// The requeued delivery's lease expires: the next lease takes it over and says so
	// (UPDATE ... FROM the locked CTE), and with no attempts left the one after dead-letters it.
	req.LeaseToken, req.MaxAttempts = "tok-3", 2
	if leased, err = leaseDeliveries(t, s, req); err != nil || len(leased) != 1 || leased[0].PreviousLeaseExpired {
		t.Fatalf("Lease after Requeue = %+v, %v; want inbox-2, no expired lease", leased, err)
	}
	expired := req
	expired.LeaseToken, expired.Now = "tok-4", now.Add(req.Visibility)
	if leased, err = leaseDeliveries(t, s, expired); err != nil || len(leased) != 1 || !leased[0].PreviousLeaseExpired {
		t.Fatalf("Lease after expiry = %+v, %v; want inbox-2 taken over from an expired lease", leased, err)
	}
	expired.LeaseToken, expired.Now = "tok-5", expired.Now.Add(req.Visibility)
	if result, err := s.Lease(t.Context(), expired); err != nil || result.ExpiredToDead != 1 || len(result.Deliveries) != 0 {
		t.Fatalf("Lease after the last attempt expired = %+v, %v; want one dead-lettered", result, err)
	}
	if err := s.Requeue(t.Context(), "inbox-2", now); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	stats, err := s.InboxStats(t.Context())
	if want := (storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: now}); err != nil ||
		len(stats) != 1 || stats[0] != want {
		t.Fatalf("InboxStats = %+v, %v; want [%+v]", stats, err, want)
	}
	res, err := s.Sweep(t.Context(), storage.SweepRequest{AckedBefore: now.Add(time.Second),
		ClaimsBefore: now, Batch: 10})
	if want := (storage.SweepResult{InboxDeleted: 1, ClaimsDeleted: 1}); err != nil || res != want {
		t.Fatalf("Sweep = %+v, %v; want %+v", res, err, want)
	}
}

func leaseDeliveries(t *testing.T, s storage.InboxStore, req storage.LeaseRequest) ([]storage.LeasedDelivery, error) {
	t.Helper()
	result, err := s.Lease(t.Context(), req)
	return result.Deliveries, err
}
