package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestInboxUpgradeKeepsDeliveriesLeasable migrates a database holding inbox records written
// before the delivery state existed (schema version 6): they become pending, visible since
// they were received.
func TestInboxUpgradeKeepsDeliveriesLeasable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlite.CreateSchemaAt(t.Context(), db, 6); err != nil {
		t.Fatalf("schema version 6: %v", err)
	}
	received := time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.UTC)
	if _, err := db.Exec(`INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method,
		url, headers, body, received_at) VALUES ('inbox-1', 'ep-1', 'evt-1', 'ep-1', 'op-1', 'sec-1', 'POST',
		'https://hooks.example.com/in/ep-1', ?, X'7B7D', ?)`, storage.EncodeHeaders(nil), received.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	stats, err := s.InboxStats(t.Context())
	if err != nil {
		t.Fatalf("InboxStats: %v", err)
	}
	if want := (storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: received}); len(stats) != 1 || stats[0] != want {
		t.Fatalf("InboxStats after the upgrade = %+v, want [%+v]", stats, want)
	}
	result, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 5, Visibility: time.Minute, MaxAttempts: 3,
		LeaseToken: "tok", Now: received})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	got := result.Deliveries
	if len(got) != 1 || got[0].InboxID != "inbox-1" || got[0].Attempts != 1 || !got[0].VisibleAt.Equal(received) {
		t.Fatalf("Lease after the upgrade = %+v, want inbox-1 visible at %s, attempt 1", got, received)
	}
}
