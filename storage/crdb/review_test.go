package crdb

import (
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestClaimBatchReusedInboxIDFailsOnlyItsClaim: the first delivery of an identity in a batch
// fails on its own (its inbox id is taken), which claims nothing. A later delivery of that
// identity in the same batch, with an inbox id of its own, must then be claimed as it would be
// alone, not fail with the first one's error: the provider would be told to retry an event
// nobody stored, and a provider that gives up would lose it.
func TestClaimBatchReusedInboxIDFailsOnlyItsClaim(t *testing.T) {
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
			mustClaim(t, s, delivery("evt-pre", "inbox-taken"), true)

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
			wantCount(t, s, 3)
		})
	}
}

// TestDeadLetterExhaustedOfUnknownOutcome: a DeadLetterExhausted whose reply is lost after
// PostgreSQL committed it was run again as if nothing had been sent, moved a second batch and
// reported only that one: the count (and the server's dead-lettered metric) missed the first.
// An outcome the store cannot know is ErrUnavailable, as for Requeue.
func TestDeadLetterExhaustedOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	s, proxy := storeBehindFaultProxy(t)
	for _, d := range []storage.Delivery{delivery("evt-1", "inbox-1"), delivery("evt-2", "inbox-2")} {
		mustClaim(t, s, d, true)
		leased := leaseOne(t, s, "tok-"+d.InboxID)
		if _, err := s.Nack(t.Context(), leased.InboxID, "tok-"+d.InboxID, base.Add(time.Hour), 5, "boom", base.Add(time.Minute)); err != nil {
			t.Fatalf("Nack: %v", err)
		}
	}
	proxy.arm(dropReply)
	n, err := s.DeadLetterExhausted(t.Context(), storage.ExhaustedRequest{MaxAttempts: 1, Reason: "lowered", Batch: 1, Now: base.Add(2 * time.Minute)})
	proxy.wantFired(t, dropReply)
	stats, statsErr := s.InboxStats(t.Context())
	if statsErr != nil || len(stats) != 1 {
		t.Fatalf("InboxStats = %+v, %v", stats, statsErr)
	}
	if err == nil && n != stats[0].Dead {
		t.Fatalf("DeadLetterExhausted whose reply was lost = %d, nil; but %d moved to dead", n, stats[0].Dead)
	}
	if err != nil && !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("DeadLetterExhausted whose reply was lost = %v, want ErrUnavailable", err)
	}
}
