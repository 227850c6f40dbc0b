package crdb

import (
	"errors"
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestClaimBatch drives commitClaims, the group commit's batch, directly, on both transaction
// paths: what a batch must get right whatever its mix of new, known, repeated and faulty claims.
func TestClaimBatch(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) *Store{
		"PostgreSQL": func(t *testing.T) *Store { return open(t, pgtest.Shared(t).NewDatabase(t)) },
		"CockroachDB path": func(t *testing.T) *Store {
			s := cockroachPathStore(t, pgtest.Shared(t).NewDatabase(t))
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
				t.Fatal(err)
			}
			mustClaim(t, s, delivery("evt-known", "inbox-known"), true)

			batch := []storage.Delivery{
				delivery("evt-a", "inbox-a"),
				delivery("evt-known", "inbox-k2"),    // claimed before the batch
				delivery("evt-a", "inbox-a2"),        // same identity as the first, later
				delivery("evt-b", "inbox-b"),         // new
				delivery("evt-known", "inbox-known"), // a retry of the earlier claim
				delivery("evt-a", "inbox-a"),         // a retry of the batch's own first claim
			}
			results, errs, err := s.commitClaims(batch)
			if err != nil {
				t.Fatalf("commitClaims: %v", err)
			}
			want := []struct {
				accepted bool
				inboxID  string
			}{
				{true, "inbox-a"}, {false, "inbox-known"}, {false, "inbox-a"}, {true, "inbox-b"},
				{true, "inbox-known"}, {true, "inbox-a"},
			}
			for i, w := range want {
				if errs[i] != nil {
					t.Fatalf("claim %d (%s): %v", i, batch[i].InboxID, errs[i])
				}
				r := results[i]
				if r.Accepted != w.accepted || r.InboxID != w.inboxID || r.OperationKey != "op-"+w.inboxID || !r.FirstReceivedAt.Equal(base) {
					t.Errorf("claim %d (%s) = %+v, want accepted %v held by %s", i, batch[i].InboxID, r, w.accepted, w.inboxID)
				}
			}
			wantCount(t, s, 3)
			if _, err := s.GetDelivery(t.Context(), "inbox-a2"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("the in-batch duplicate was stored: %v", err)
			}

			// An inbox id reused by another identity fails that claim alone.
			batch = []storage.Delivery{delivery("evt-c", "inbox-c"), delivery("evt-d", "inbox-b"), delivery("evt-e", "inbox-e")}
			results, errs, err = s.commitClaims(batch)
			if err != nil {
				t.Fatalf("commitClaims with a reused inbox id: %v", err)
			}
			if !errors.Is(errs[1], storage.ErrAlreadyExists) {
				t.Fatalf("claim with a reused inbox id: %+v, %v; want ErrAlreadyExists", results[1], errs[1])
			}
			for _, i := range []int{0, 2} {
				if errs[i] != nil || !results[i].Accepted {
					t.Fatalf("claim %d beside the reused inbox id: %+v, %v; want accepted", i, results[i], errs[i])
				}
			}
			wantCount(t, s, 5)
			mustClaim(t, s, delivery("evt-d", "inbox-d"), true)
		})
	}
}
