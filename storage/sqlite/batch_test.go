package sqlite

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
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
