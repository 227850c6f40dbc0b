package sqlite

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestClaimBatchReusedInboxIDFailsOnlyItsClaim: the first delivery of an identity in a batch
// fails on its own (its inbox id is taken), which claims nothing; a later delivery of that
// identity in the same batch, with an inbox id of its own, is claimed as it would be alone, and
// one after it is its duplicate. (The PostgreSQL backend failed them with the first one's error.)
func TestClaimBatchReusedInboxIDFailsOnlyItsClaim(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	at := time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.UTC)
	delivery := func(eventID, inboxID string) storage.Delivery {
		return storage.Delivery{InboxID: inboxID, Scope: "ep-1", EventID: eventID, EndpointID: "ep-1",
			OperationKey: "op-" + inboxID, Method: "POST", Body: []byte(eventID), ReceivedAt: at}
	}
	if r, err := s.Claim(t.Context(), delivery("evt-pre", "inbox-taken")); err != nil || !r.Accepted {
		t.Fatalf("first claim: %+v, %v", r, err)
	}
	batch := []storage.Delivery{
		delivery("evt-x", "inbox-taken"), // an inbox id taken before: fails alone
		delivery("evt-x", "inbox-x2"),    // the same event, its own inbox id
		delivery("evt-x", "inbox-x3"),    // and again: a duplicate of inbox-x2
		delivery("evt-y", "inbox-y"),
	}
	results, errs, err := s.commitClaims(batch)
	if err != nil {
		t.Fatalf("commitClaims: %v", err)
	}
	if !errors.Is(errs[0], storage.ErrAlreadyExists) {
		t.Errorf("claim with a taken inbox id = %+v, %v; want ErrAlreadyExists", results[0], errs[0])
	}
	for i, w := range []struct {
		accepted bool
		inboxID  string
	}{1: {true, "inbox-x2"}, 2: {false, "inbox-x2"}, 3: {true, "inbox-y"}} {
		if i == 0 {
			continue
		}
		if r := results[i]; errs[i] != nil || r.Accepted != w.accepted || r.InboxID != w.inboxID {
			t.Errorf("claim %d (%s) = %+v, %v; want accepted %v held by %s", i, batch[i].InboxID, r, errs[i], w.accepted, w.inboxID)
		}
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 3 {
		t.Fatalf("CountDeliveries = %d, %v; want 3", n, err)
	}
}
