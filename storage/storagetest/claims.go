package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// claimStore returns a fresh store with the endpoints the claim tests deliver to, so that a
// backend is free to reference endpoints from its inbox.
func claimStore(t *testing.T, h harness) storage.Store {
	t.Helper()
	s := h.fresh(t)
	createEndpoint(t, s, newEndpoint("ep-1"))
	createEndpoint(t, s, newEndpoint("ep-2"))
	return s
}

func getDelivery(t *testing.T, s storage.Store, inboxID string) storage.Delivery {
	t.Helper()
	d, err := s.GetDelivery(t.Context(), inboxID)
	must(t, err, "GetDelivery "+inboxID)
	return d
}

func wantNoDelivery(t *testing.T, s storage.Store, inboxID string) {
	t.Helper()
	_, err := s.GetDelivery(t.Context(), inboxID)
	wantErr(t, err, storage.ErrNotFound, "GetDelivery "+inboxID)
}

func testClaims(t *testing.T, h harness) {
	t.Run("lookup finds a claim without writing", func(t *testing.T) {
		s := claimStore(t, h)
		d := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
		if _, err := s.LookupClaim(t.Context(), "ep-1", "evt-1"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("LookupClaim before the claim: %v, want ErrNotFound", err)
		}
		claim(t, s, d)
		got, err := s.LookupClaim(t.Context(), "ep-1", "evt-1")
		if err != nil {
			t.Fatalf("LookupClaim: %v", err)
		}
		wantSame(t, rejectedFor(d), got, "looked-up claim")
		if _, err := s.LookupClaim(t.Context(), "ep-2", "evt-1"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("LookupClaim in another scope: %v, want ErrNotFound", err)
		}
		wantCount(t, s, "", 1)
	})

	t.Run("first claim is accepted and stored", func(t *testing.T) {
		s := claimStore(t, h)
		d := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
		wantSame(t, acceptedBy(d), claim(t, s, d), "claim result")
		wantSame(t, d, getDelivery(t, s, "inbox-1"), "stored delivery")
		wantCount(t, s, "ep-1", 1)
	})

	t.Run("duplicate reports the first claim and writes nothing", func(t *testing.T) {
		s := claimStore(t, h)
		first := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
		claim(t, s, first)

		dup := newDelivery("ep-1", "ep-1", "evt-1", "inbox-2")
		dup.ReceivedAt = at(time.Minute)
		dup.Body = []byte("a different body")
		wantSame(t, rejectedFor(first), claim(t, s, dup), "duplicate claim result")

		wantCount(t, s, "ep-1", 1)
		wantCount(t, s, "", 1)
		wantNoDelivery(t, s, "inbox-2")
		wantSame(t, first, getDelivery(t, s, "inbox-1"), "first delivery after the duplicate")

		// Asking again changes nothing either.
		wantSame(t, rejectedFor(first), claim(t, s, dup), "second duplicate claim result")
		wantCount(t, s, "", 1)
	})

	t.Run("duplicate from another endpoint sharing the scope is rejected", func(t *testing.T) {
		s := claimStore(t, h)
		first := newDelivery("ep-1", "shared", "evt-1", "inbox-1")
		claim(t, s, first)
		dup := newDelivery("ep-2", "shared", "evt-1", "inbox-2")
		wantSame(t, rejectedFor(first), claim(t, s, dup), "duplicate claim result")
		wantCount(t, s, "shared", 1)
		wantNoDelivery(t, s, "inbox-2")
	})

	t.Run("same event id in another scope is a separate claim", func(t *testing.T) {
		s := claimStore(t, h)
		a := newDelivery("ep-1", "scope-a", "evt-1", "inbox-1")
		b := newDelivery("ep-2", "scope-b", "evt-1", "inbox-2")
		b.ReceivedAt = at(time.Hour)
		wantSame(t, acceptedBy(a), claim(t, s, a), "claim in scope-a")
		wantSame(t, acceptedBy(b), claim(t, s, b), "claim in scope-b")
		wantSame(t, a, getDelivery(t, s, "inbox-1"), "delivery in scope-a")
		wantSame(t, b, getDelivery(t, s, "inbox-2"), "delivery in scope-b")
		wantCount(t, s, "scope-a", 1)
		wantCount(t, s, "scope-b", 1)
		wantCount(t, s, "", 2)
	})

	t.Run("scope and event id are compared exactly", func(t *testing.T) {
		s := claimStore(t, h)
		ids := []struct{ scope, event string }{
			{"ep-1", "evt-1"},
			{"ep-1", "EVT-1"},
			{"ep-1", "evt-1 "},
			{"EP-1", "evt-1"},
			{"ep-1x", "evt-1"},
			{"ep-1", "xevt-1"},
		}
		for i, id := range ids {
			d := newDelivery("ep-1", id.scope, id.event, fmt.Sprintf("inbox-%d", i))
			if r := claim(t, s, d); !r.Accepted {
				t.Fatalf("Claim(%q, %q) not accepted: %+v", id.scope, id.event, r)
			}
		}
		wantCount(t, s, "", int64(len(ids)))
	})

	t.Run("retry with the same inbox id is reported accepted", func(t *testing.T) {
		s := claimStore(t, h)
		d := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
		claim(t, s, d)
		// This is what a backend sees when it retries after an ambiguous commit that did
		// in fact succeed: the claim is held by its own inbox id, so it won.
		wantSame(t, acceptedBy(d), claim(t, s, d), "retried claim result")
		wantCount(t, s, "", 1)
		wantSame(t, d, getDelivery(t, s, "inbox-1"), "stored delivery")
	})

	t.Run("delivery round-trips byte for byte", func(t *testing.T) {
		cases := map[string]func(d *storage.Delivery){
			"binary body and headers": func(d *storage.Delivery) {
				d.Body = append([]byte("{\"a\":\x00\"\xff\xfe\xc3\x28\"}\r\n"), allBytes()...)
				d.Headers = []storage.Header{
					{Name: "Webhook-Signature", Value: "v1,abc v1,def"},
					{Name: "X-Repeat", Value: "1"},
					{Name: "x-repeat", Value: "2"},
					{Name: "X-Repeat", Value: "1"},
					{Name: "X-Empty", Value: ""},
					{Name: "X-Binary", Value: "\x00\x01\xff\xfe not utf-8 \xc3\x28"},
					{Name: "", Value: "nameless"},
					{Name: "A-Last", Value: "order is kept, not sorted"},
				}
			},
			"method url and ids": func(d *storage.Delivery) {
				d.Method = "PUT"
				d.URL = "https://hooks.example.com/in/ep-1?a=1&b=%20x&a=2#frag ü"
				d.SecretID = "sec-🔑"
				// Identifiers are text: any valid UTF-8, but not arbitrary bytes.
				d.OperationKey = "op:with/odd chars;ü"
				d.EventID = "evt/ü/\t"
			},
			"empty body and no headers": func(d *storage.Delivery) {
				d.Body = nil
				d.Headers = nil
			},
			"large body": func(d *storage.Delivery) {
				d.Body = make([]byte, 256<<10)
				for i := range d.Body {
					d.Body[i] = byte(i * 7)
				}
			},
			"received time precision": func(d *storage.Delivery) {
				d.ReceivedAt = time.Date(2031, time.December, 31, 23, 59, 59, 999999000, time.UTC)
			},
		}
		for name, edit := range cases {
			t.Run(name, func(t *testing.T) {
				s := claimStore(t, h)
				d := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
				edit(&d)
				wantSame(t, acceptedBy(d), claim(t, s, d), "claim result")
				wantSame(t, d, getDelivery(t, s, "inbox-1"), "stored delivery")
			})
		}
	})

	t.Run("get unknown delivery returns ErrNotFound", func(t *testing.T) {
		s := claimStore(t, h)
		claim(t, s, newDelivery("ep-1", "ep-1", "evt-1", "inbox-1"))
		wantNoDelivery(t, s, "inbox-2")
		wantNoDelivery(t, s, "")
	})

	t.Run("missing required field returns ErrInvalid and writes nothing", func(t *testing.T) {
		cases := map[string]func(d *storage.Delivery){
			"inbox id":      func(d *storage.Delivery) { d.InboxID = "" },
			"scope":         func(d *storage.Delivery) { d.Scope = "" },
			"event id":      func(d *storage.Delivery) { d.EventID = "" },
			"endpoint id":   func(d *storage.Delivery) { d.EndpointID = "" },
			"operation key": func(d *storage.Delivery) { d.OperationKey = "" },
		}
		for name, edit := range cases {
			t.Run(name, func(t *testing.T) {
				s := claimStore(t, h)
				d := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
				edit(&d)
				_, err := s.Claim(t.Context(), d)
				wantErr(t, err, storage.ErrInvalid, "Claim")
				wantCount(t, s, "", 0)
				wantNoDelivery(t, s, d.InboxID)
				// The identity stays free for a valid claim.
				good := newDelivery("ep-1", "ep-1", "evt-1", "inbox-2")
				wantSame(t, acceptedBy(good), claim(t, s, good), "valid claim after the invalid one")
			})
		}
	})

	t.Run("a claim whose caller has gone is unavailable", func(t *testing.T) { claimCanceled(t, h) })

	t.Run("count per scope and overall", func(t *testing.T) {
		s := claimStore(t, h)
		wantCount(t, s, "", 0)
		wantCount(t, s, "scope-a", 0)
		for i := range 3 {
			claim(t, s, newDelivery("ep-1", "scope-a", fmt.Sprintf("evt-%d", i), fmt.Sprintf("a-%d", i)))
		}
		claim(t, s, newDelivery("ep-2", "scope-b", "evt-0", "b-0"))
		claim(t, s, newDelivery("ep-2", "scope-b", "evt-0", "b-dup"))
		wantCount(t, s, "scope-a", 3)
		wantCount(t, s, "scope-b", 1)
		wantCount(t, s, "scope-c", 0)
		wantCount(t, s, "", 4)
	})
}

func testConcurrency(t *testing.T, h harness) {
	const n = 50

	t.Run("racing claims of one identity accept exactly one", func(t *testing.T) {
		s := claimStore(t, h)
		raceOneIdentity(t, []storage.Store{s}, n)
	})

	t.Run("racing claims through several handles accept exactly one", func(t *testing.T) {
		// Several handles on one database stand for several server instances.
		open := h.reopenable(t)
		stores := []storage.Store{open(t), open(t), open(t)}
		createEndpoint(t, stores[0], newEndpoint("ep-1"))
		raceOneIdentity(t, stores, n)
	})

	t.Run("racing claims of distinct identities are all accepted", func(t *testing.T) {
		s := claimStore(t, h)
		results := make([]storage.ClaimResult, n)
		errs := make([]error, n)
		deliveries := make([]storage.Delivery, n)
		for i := range n {
			deliveries[i] = newDelivery("ep-1", "ep-1", fmt.Sprintf("evt-%02d", i), fmt.Sprintf("inbox-%02d", i))
		}
		race(n, func(i int) {
			results[i], errs[i] = s.Claim(t.Context(), deliveries[i])
		})
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("claim %d: unexpected error: %v", i, errs[i])
			}
			wantSame(t, acceptedBy(deliveries[i]), results[i], fmt.Sprintf("result of claim %d", i))
		}
		wantCount(t, s, "", n)
	})

	t.Run("reads proceed while claims are written", func(t *testing.T) {
		s := claimStore(t, h)
		seed := newDelivery("ep-1", "ep-1", "evt-seed", "inbox-seed")
		claim(t, s, seed)
		errs := make([]error, 2*n)
		race(2*n, func(i int) {
			if i%2 == 0 {
				d := newDelivery("ep-1", "ep-1", fmt.Sprintf("evt-%02d", i), fmt.Sprintf("inbox-%02d", i))
				_, errs[i] = s.Claim(t.Context(), d)
				return
			}
			got, err := s.GetDelivery(t.Context(), "inbox-seed")
			if err == nil {
				if d := diff(seed, got); d != "" {
					err = fmt.Errorf("seed delivery differs:\n%s", d)
				}
			}
			if err == nil {
				_, err = s.ListSecrets(t.Context(), "ep-1")
			}
			errs[i] = err
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("goroutine %d: unexpected error: %v", i, err)
			}
		}
		wantCount(t, s, "", n+1)
	})
}

// raceOneIdentity races n claims of one identity, spread over the stores, each with its own
// inbox id and operation key, and checks that exactly one wins and all agree on the winner.
func raceOneIdentity(t *testing.T, stores []storage.Store, n int) {
	t.Helper()
	results := make([]storage.ClaimResult, n)
	errs := make([]error, n)
	deliveries := make([]storage.Delivery, n)
	for i := range n {
		d := newDelivery("ep-1", "ep-1", "evt-race", fmt.Sprintf("inbox-%02d", i))
		d.ReceivedAt = at(time.Duration(i) * time.Millisecond)
		deliveries[i] = d
	}
	race(n, func(i int) {
		results[i], errs[i] = stores[i%len(stores)].Claim(t.Context(), deliveries[i])
	})

	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: unexpected error: %v", i, errs[i])
		}
		if results[i].Accepted {
			if winner >= 0 {
				t.Fatalf("claims %d and %d were both accepted", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no claim was accepted")
	}
	want := rejectedFor(deliveries[winner])
	for i := range n {
		got := results[i]
		got.Accepted = false
		wantSame(t, want, got, fmt.Sprintf("result of claim %d", i))
	}
	for _, s := range stores {
		wantCount(t, s, "", 1)
		wantSame(t, deliveries[winner], getDelivery(t, s, deliveries[winner].InboxID), "winning delivery")
	}
}

// race runs f(0) … f(n-1) in n goroutines released together, and waits for all of them.
func race(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

// ClaimBatchReusedInboxID checks a store's claim batch, commit (the function its group commit
// runs), when the first delivery of an identity in the batch fails on its own, its inbox id
// taken before: it claims nothing, so a later delivery of that identity with an inbox id of
// its own must be claimed as it would be alone, and one after that be its duplicate, rather
// than fail with the first one's error (the provider would be told to retry an event nobody
// stored); the rest of the batch is claimed as usual. s must be empty.
func ClaimBatchReusedInboxID(t *testing.T, s storage.Store, commit func([]storage.Delivery) ([]storage.ClaimResult, []error, error)) {
	t.Helper()
	createEndpoint(t, s, newEndpoint("ep-1"))
	delivery := func(eventID, inboxID string) storage.Delivery { return newDelivery("ep-1", "ep-1", eventID, inboxID) }
	claim(t, s, delivery("evt-pre", "inbox-taken"))
	batch := []storage.Delivery{
		delivery("evt-x", "inbox-taken"), // an inbox id taken before: fails alone
		delivery("evt-x", "inbox-x2"),    // the same event, its own inbox id
		delivery("evt-x", "inbox-x3"),    // and again: a duplicate of inbox-x2
		delivery("evt-y", "inbox-y"),
	}
	results, errs, err := commit(batch)
	if err != nil {
		t.Fatalf("claim batch: %v", err)
	}
	if !errors.Is(errs[0], storage.ErrAlreadyExists) {
		t.Errorf("claim with a taken inbox id = %+v, %v; want ErrAlreadyExists", results[0], errs[0])
	}
	for i, want := range []storage.ClaimResult{1: acceptedBy(batch[1]), 2: rejectedFor(batch[1]), 3: acceptedBy(batch[3])} {
		if i == 0 {
			continue
		}
		if got := results[i]; errs[i] != nil || got.Accepted != want.Accepted || got.InboxID != want.InboxID || got.OperationKey != want.OperationKey {
			t.Errorf("claim %d (%s) = %+v, %v; want %+v", i, batch[i].InboxID, got, errs[i], want)
		}
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 3 {
		t.Errorf("CountDeliveries = %d, %v; want 3", n, err)
	}
}

// claimCanceled checks that a claim whose caller has gone reports ErrUnavailable, as any claim
// that did not commit for it (storage.ClaimStore): never Accepted, and never a sentinel that
// the server would answer as the event's own fault.
func claimCanceled(t *testing.T, h harness) {
	s := claimStore(t, h)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r, err := s.Claim(ctx, newDelivery("ep-1", "ep-1", "evt-1", "inbox-1"))
	if !errors.Is(err, storage.ErrUnavailable) || r.Accepted {
		t.Fatalf("Claim with a canceled context = %+v, %v; want an error wrapping ErrUnavailable", r, err)
	}
	// Whether it committed or not, a retry with its inbox id is accepted.
	d := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
	wantSame(t, acceptedBy(d), claim(t, s, d), "the claim again")
}
