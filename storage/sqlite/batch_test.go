package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// TestClaimBatch drives commitClaims, the group commit's batch, directly: what a batch must get
// right whatever its mix of new, known, repeated and faulty claims.
func TestClaimBatch(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	base := time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.UTC)
	if err := s.CreateEndpoint(t.Context(), storage.Endpoint{ID: "ep-1", Provider: "stripe", MaxBodyBytes: 1 << 20,
		DedupeScope: "ep-1", CreatedAt: base, UpdatedAt: base}); err != nil {
		t.Fatal(err)
	}
	delivery := func(eventID, inboxID string) storage.Delivery {
		return storage.Delivery{InboxID: inboxID, Scope: "ep-1", EventID: eventID, EndpointID: "ep-1",
			OperationKey: "op-" + inboxID, Method: "POST", Body: []byte(eventID), ReceivedAt: base}
	}
	if r, err := s.Claim(t.Context(), delivery("evt-known", "inbox-known")); err != nil || !r.Accepted {
		t.Fatalf("first claim: %+v, %v", r, err)
	}

	batch := []storage.Delivery{
		delivery("evt-a", "inbox-a"),
		delivery("evt-known", "inbox-k2"),    // claimed before the batch
		delivery("evt-a", "inbox-a2"),        // same identity as the first, later
		delivery("evt-b", "inbox-b"),         // new
		delivery("evt-known", "inbox-known"), // a retry of the earlier claim
		delivery("evt-c", "inbox-b"),         // an inbox id taken in this very batch
		delivery("evt-d", "inbox-known"),     // an inbox id taken before
	}
	results, errs, err := s.commitClaims(batch)
	if err != nil {
		t.Fatalf("commitClaims: %v", err)
	}
	want := []struct {
		accepted bool
		inboxID  string
		err      error
	}{
		{true, "inbox-a", nil}, {false, "inbox-known", nil}, {false, "inbox-a", nil}, {true, "inbox-b", nil},
		{true, "inbox-known", nil}, {false, "", storage.ErrAlreadyExists}, {false, "", storage.ErrAlreadyExists},
	}
	for i, w := range want {
		if w.err != nil {
			if !errors.Is(errs[i], w.err) {
				t.Errorf("claim %d (%s): %+v, %v; want %v", i, batch[i].InboxID, results[i], errs[i], w.err)
			}
			continue
		}
		r := results[i]
		if errs[i] != nil || r.Accepted != w.accepted || r.InboxID != w.inboxID || r.OperationKey != "op-"+w.inboxID ||
			!r.FirstReceivedAt.Equal(base.Truncate(time.Microsecond)) {
			t.Errorf("claim %d (%s) = %+v, %v; want accepted %v held by %s", i, batch[i].InboxID, r, errs[i], w.accepted, w.inboxID)
		}
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 3 {
		t.Fatalf("CountDeliveries = %d, %v; want 3", n, err)
	}
	// The claims that failed on their own left their identities free.
	for _, id := range []string{"evt-c", "evt-d"} {
		if r, err := s.Claim(t.Context(), delivery(id, "inbox-"+id)); err != nil || !r.Accepted {
			t.Fatalf("claim of %s after its failed claim: %+v, %v", id, r, err)
		}
	}
}

// TestClaimWhileAnotherProcessHoldsTheWriteLock: a claim that cannot get SQLite's write lock
// (another process on the file holds it past the busy timeout) is ErrUnavailable within a
// bound, writes nothing, and is accepted once the lock is free.
func TestClaimWhileAnotherProcessHoldsTheWriteLock(t *testing.T) {
	t.Parallel()
	s, conn := storeBehindAnotherProcessesWriteLock(t)
	d := evt1Delivery()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if r, err := s.Claim(ctx, d); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("claim with the write lock held elsewhere = %+v, %v; want ErrUnavailable", r, err)
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LookupClaim(t.Context(), "ep-1", "evt-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("LookupClaim after the failed claim = %v, want ErrNotFound", err)
	}
	d.InboxID = "inbox-2"
	r, err := s.Claim(t.Context(), d)
	if err != nil || !r.Accepted {
		t.Fatalf("claim once the lock is free = %+v, %v; want accepted", r, err)
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 1 {
		t.Fatalf("CountDeliveries = %d, %v; want 1", n, err)
	}
}

// TestClaimOnAFullDisk: a claim batch that cannot grow the database (SQLITE_FULL, here through
// max_page_count) is ErrUnavailable for every claim in it and leaves nothing half written; once
// there is room again the same deliveries are accepted.
func TestClaimOnAFullDisk(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	var pages int64
	if err := s.writer.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer.ExecContext(t.Context(), "PRAGMA max_page_count = "+itoa(pages)); err != nil {
		t.Fatal(err)
	}
	small := storage.Delivery{InboxID: "inbox-s", Scope: "ep-1", EventID: "evt-s", EndpointID: "ep-1", OperationKey: "op-s",
		SecretID: "sec-1", Method: "POST", URL: "https://h/x", Body: []byte("{}"), ReceivedAt: time.Unix(2, 0).UTC()}
	big := small
	big.InboxID, big.EventID, big.OperationKey, big.Body = "inbox-b", "evt-b", "op-b", make([]byte, 256<<10)
	results, errs, err := s.commitClaims([]storage.Delivery{small, big})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("claim batch on a full disk = %+v, %v, %v; want ErrUnavailable", results, errs, err)
	}
	for _, id := range []string{"evt-s", "evt-b"} {
		if _, err := s.LookupClaim(t.Context(), "ep-1", id); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("LookupClaim(%s) after the failed batch = %v, want ErrNotFound", id, err)
		}
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("CountDeliveries = %d, %v; want 0", n, err)
	}
	// A caller's error names the operation once: the batch's failure was classified again on
	// the caller's path ("sqlite: claim: storage: unavailable: sqlite: claim: ...").
	if _, err := s.Claim(t.Context(), big); !errors.Is(err, storage.ErrUnavailable) || strings.Count(err.Error(), "sqlite: claim") != 1 {
		t.Fatalf("Claim on a full disk = %v; want ErrUnavailable, naming the operation once", err)
	}
	if _, err := s.writer.ExecContext(t.Context(), "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []storage.Delivery{small, big} {
		if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
			t.Fatalf("claim %s with room again = %+v, %v; want accepted", d.EventID, r, err)
		}
	}
	stats, err := s.InboxStats(t.Context())
	if err != nil || len(stats) != 1 || stats[0].Pending != 2 {
		t.Fatalf("InboxStats = %+v, %v; want 2 pending", stats, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// storeBehindAnotherProcessesWriteLock opens a store with a busy timeout of 100 ms and
// endpoint ep-1, then has another connection to its file, as another process would, take the
// write lock: the store's writes are ErrUnavailable until the test runs ROLLBACK on the
// returned conn.
func storeBehindAnotherProcessesWriteLock(t *testing.T) (*Store, *sql.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s, err := OpenWith(t.Context(), path, Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	other, err := sql.Open("sqlite", dsn(path, 100*time.Millisecond, writerConn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return s, conn
}

// evt1Delivery is a delivery of event evt-1 to endpoint ep-1, held by inbox-1.
func evt1Delivery() storage.Delivery {
	return storage.Delivery{InboxID: "inbox-1", Scope: "ep-1", EventID: "evt-1", EndpointID: "ep-1", OperationKey: "op-1",
		SecretID: "sec-1", Method: "POST", URL: "https://h/x", Body: []byte("{}"), ReceivedAt: time.Unix(2, 0).UTC()}
}

// createStripeEndpoint stores a Stripe endpoint with the id.
func createStripeEndpoint(t *testing.T, s *Store, id string) {
	t.Helper()
	ep := storage.Endpoint{ID: id, Provider: "stripe", TimestampTolerance: time.Minute, MaxBodyBytes: 1 << 20,
		DedupeScope: id, CreatedAt: time.Unix(1, 0), UpdatedAt: time.Unix(1, 0)}
	if err := s.CreateEndpoint(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
}

// TestClaimBatchReusedInboxIDFailsOnlyItsClaim: see storagetest.ClaimBatchReusedInboxID.
func TestClaimBatchReusedInboxIDFailsOnlyItsClaim(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	storagetest.ClaimBatchReusedInboxID(t, s, s.commitClaims)
}
