package sqlite_test

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestSweptDeliveriesLeaveNoTraceInTheFile: retention deletes acked deliveries, whose bodies
// may hold personal data, and README promises them gone after --inbox-retention. SQLite
// leaves deleted content in place in its pages (freed cells, free-list pages) until reused,
// where anyone reading the file or a copy of it found it; secure_delete overwrites it with
// zeros as it is deleted.
func TestSweptDeliveriesLeaveNoTraceInTheFile(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	ctx := t.Context()
	t0 := time.Date(2026, time.March, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateEndpoint(ctx, storage.Endpoint{ID: "ep-1", Provider: "stripe", TimestampTolerance: 5 * time.Minute,
		MaxBodyBytes: 1 << 20, DedupeScope: "ep-1", CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	// Two pages' worth of deliveries, so that the sweep frees whole pages as well as cells.
	marker := []byte("personal-data-7f3a9c")
	body := bytes.Repeat(marker, 100)
	const n = 40
	for i := range n {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		r, err := s.Claim(ctx, storage.Delivery{InboxID: "inbox-" + id, Scope: "ep-1", EventID: "evt-" + id, EndpointID: "ep-1",
			OperationKey: "op-" + id, SecretID: "sec-1", Method: "POST", URL: "https://hooks.example.com/in",
			Body: body, ReceivedAt: t0})
		if err != nil || !r.Accepted {
			t.Fatalf("Claim %s: %+v, %v", id, r, err)
		}
	}
	leased, err := s.Lease(ctx, storage.LeaseRequest{Max: n, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok", Now: t0.Add(time.Second)})
	if err != nil || len(leased.Deliveries) != n {
		t.Fatalf("Lease: %d deliveries, %v", len(leased.Deliveries), err)
	}
	for _, d := range leased.Deliveries {
		if err := s.Ack(ctx, d.InboxID, "tok", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Sweep(ctx, storage.SweepRequest{AckedBefore: t0.Add(time.Hour), ClaimsBefore: t0.Add(time.Hour), Batch: 1000})
	if err != nil || res.InboxDeleted != n {
		t.Fatalf("Sweep: %+v, %v", res, err)
	}
	// Closing checkpoints the write-ahead log into the file and removes the log.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		content, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if k := bytes.Count(content, marker); k != 0 {
			t.Errorf("%s holds the swept deliveries' body %d times", f, k)
		}
	}
}
