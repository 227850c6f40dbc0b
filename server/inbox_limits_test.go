package server_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// TestLeaseWithoutMaxDeliveriesTakesOne: max_deliveries left at 0 leases one delivery, not a
// batch: a worker that sets nothing runs one delivery at a time, and deliveries it did not ask
// for would sit leased, their attempts spent, until their leases ran out.
func TestLeaseWithoutMaxDeliveriesTakesOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		accepted := acceptSome(t, e, "work", 3)
		resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{VisibilityTimeout: durationpb.New(time.Minute)})
		if err != nil {
			t.Fatalf("Lease: %v", err)
		}
		if got := resp.GetDeliveries(); len(got) != 1 || got[0].GetInboxId() != accepted[0].GetInboxId() {
			t.Fatalf("Lease with max_deliveries 0 leased %d deliveries, want the oldest alone", len(got))
		}
	})
}

// TestDeadLetterPagesFollowWhenTheyLastBecameDue: dead letters are listed by when they last
// became due (a nack's retry time), not by receipt, and a page token continues after the last
// listed one in that order: a token placed at the receipt of a delivery nacked for later
// listed it again on the next page.
func TestDeadLetterPagesFollowWhenTheyLastBecameDue(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 2 })
		accepted := acceptSome(t, e, "work", 2)
		first, second := accepted[0].GetInboxId(), accepted[1].GetInboxId()
		// The first received is retried two hours on, the second one hour on: the second is due
		// first, and dies due first.
		retry := map[string]time.Duration{first: 2 * time.Hour, second: time.Hour}
		for _, d := range lease(t, e, 10, time.Minute) {
			if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
				RetryAfter: durationpb.New(retry[d.GetInboxId()]), Error: "down"}); err != nil {
				t.Fatalf("Nack %s: %v", d.GetInboxId(), err)
			}
		}
		e.clock.Advance(3 * time.Hour)
		killAccepted(t, e)
		ids, pages := listAllDead(t, e, &hookverifyv1.ListDeadLettersRequest{Limit: 1})
		if want := []string{second, first}; !slices.Equal(ids, want) || pages != 2 {
			t.Fatalf("dead letters listed one a page = %q in %d pages, want %q in 2", ids, pages, want)
		}
	})
}

// TestAlreadyAckedOnlyForThisServicesErrorInfo: a worker's client takes an error for "the work
// is done" only when it carries this service's ALREADY_ACKED ErrorInfo. The same reason in
// another domain (a proxy's, another service's) says nothing about the delivery, and taken
// for done the worker would drop work that never ran.
func TestAlreadyAckedOnlyForThisServicesErrorInfo(t *testing.T) {
	withInfo := func(code codes.Code, domain string) error {
		st, err := status.New(code, "refused").WithDetails(&errdetails.ErrorInfo{Reason: server.AlreadyAckedReason, Domain: domain})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	if !server.AlreadyAcked(withInfo(codes.FailedPrecondition, server.ErrorDomain)) {
		t.Error("AlreadyAcked(FAILED_PRECONDITION with this service's ALREADY_ACKED) = false, want true")
	}
	if server.AlreadyAcked(withInfo(codes.FailedPrecondition, "proxy.example")) {
		t.Error("AlreadyAcked(FAILED_PRECONDITION with ALREADY_ACKED of another domain) = true, want false")
	}
	if server.AlreadyAcked(withInfo(codes.Unavailable, server.ErrorDomain)) {
		t.Error("AlreadyAcked(UNAVAILABLE with ALREADY_ACKED) = true, want false")
	}
}

// TestEmptyLeaseCountsUnreadEndpointsAsKnown: unknown_endpoint_ids is a hint that a worker's
// --endpoint names nothing. An endpoint the server could not read is not known to be missing:
// named unknown, a worker that stops (or an operator who "fixes" its flags) on that hint would
// do so for a storage hiccup.
func TestEmptyLeaseCountsUnreadEndpointsAsKnown(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e, st := newEnvOver(t, b, newOutageStore)
		st.down.Store(true)
		e.instance = e.start(t, st)
		resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{EndpointIds: []string{"not-read"}, MaxDeliveries: 1})
		if err != nil {
			t.Fatalf("Lease: %v", err)
		}
		if len(resp.GetDeliveries()) != 0 || len(resp.GetUnknownEndpointIds()) != 0 {
			t.Fatalf("Lease while endpoints cannot be read = %v; want nothing leased and no endpoint named unknown", resp)
		}
	})
}

// TestNackNotAttemptedWaitsItsRetryAfter: a delivery given back (not_attempted) is leasable
// again only after the retry_after the worker asked for, as after any nack: a worker stopping
// for a deploy asks for a pause, and would otherwise be handed the delivery straight back.
func TestNackNotAttemptedWaitsItsRetryAfter(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)[0]
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
			RetryAfter: durationpb.New(time.Minute), Error: "stopping", NotAttempted: true}); err != nil {
			t.Fatalf("Nack not_attempted: %v", err)
		}
		if got := lease(t, e, 1, time.Minute); len(got) != 0 {
			t.Fatalf("lease right after giving back with retry_after 1m leased %d, want nothing", len(got))
		}
		e.clock.Advance(time.Minute)
		if got := lease(t, e, 1, time.Minute); len(got) != 1 || got[0].GetInboxId() != d.GetInboxId() || got[0].GetAttempts() != 1 {
			t.Fatalf("lease once retry_after has passed = %v, want the delivery given back, attempt 1", got)
		}
	})
}

// TestInboxStatsAgesNeverNegative: GetInboxStats' ages are how long work has waited. A pending
// delivery due later (a nack's retry_after) has waited for nothing yet: its age is zero, not
// negative; and a lease still live has not run out, so no expired-lease age is given for it
// (a negative one would read as a lease that ran out, to a dashboard taking its absolute value
// or alerting on presence).
func TestInboxStatsAgesNeverNegative(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 2)
		got := lease(t, e, 2, time.Minute)
		if len(got) != 2 {
			t.Fatalf("leased %d, want 2", len(got))
		}
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: got[0].GetInboxId(), LeaseToken: got[0].GetLeaseToken(),
			RetryAfter: durationpb.New(time.Hour), Error: "later"}); err != nil {
			t.Fatalf("Nack: %v", err)
		}
		stats, err := e.inbox.GetInboxStats(t.Context(), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil {
			t.Fatalf("GetInboxStats: %v", err)
		}
		eps := stats.GetEndpoints()
		if len(eps) != 1 || eps[0].GetPending() != 1 || eps[0].GetLeased() != 1 {
			t.Fatalf("GetInboxStats = %v, want work with 1 pending and 1 leased", stats)
		}
		if age := eps[0].GetOldestPendingAge(); age == nil || age.AsDuration() != 0 {
			t.Errorf("oldest_pending_age of a delivery due in an hour = %v, want 0", age)
		}
		if age := eps[0].GetOldestExpiredLeaseAge(); age != nil {
			t.Errorf("oldest_expired_lease_age with only a live lease = %v, want none", age.AsDuration())
		}
	})
}

// TestLeaseRefusesMoreThanMaxDeliveries: max_deliveries is bounded at 100 (a lease's answer is
// one message, its deliveries' work one worker's); 101 is refused, not served.
func TestLeaseRefusesMoreThanMaxDeliveries(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		_, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{MaxDeliveries: 101})
		wantCode(t, err, codes.InvalidArgument)
		if got := lease(t, e, 100, time.Minute); len(got) != 1 {
			t.Fatalf("Lease of 100 after the refused one leased %d, want the one delivery", len(got))
		}
	})
}

// TestEmptyLeaseKnowsCachedEndpoints: an empty lease names as unknown only the endpoints that
// do not exist, whether or not the endpoint cache holds them: an endpoint the cache holds
// (it has just verified deliveries) is known, and a worker told otherwise would stop polling
// a live endpoint.
func TestEmptyLeaseKnowsCachedEndpoints(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1) // the endpoint is cached by the verification
		d := lease(t, e, 1, time.Minute)[0]
		if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{EndpointIds: []string{"work", "wrok"}})
		if err != nil {
			t.Fatalf("Lease: %v", err)
		}
		if len(resp.GetDeliveries()) != 0 || !slices.Equal(resp.GetUnknownEndpointIds(), []string{"wrok"}) {
			t.Fatalf("empty lease of work and wrok: unknown_endpoint_ids %q, want [wrok]", resp.GetUnknownEndpointIds())
		}
	})
}

// TestNackRetryAfterBounded: retry_after must be between 0 and MaxVisibility. A negative one
// would make the delivery due before it failed, ahead of work waiting longer; one past the
// bound parks it for longer than any lease may last. Both are refused, and the lease stays the
// worker's.
func TestNackRetryAfterBounded(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)[0]
		for _, retry := range []time.Duration{-time.Second, server.MaxVisibility + time.Second} {
			_, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
				RetryAfter: durationpb.New(retry), Error: "down"})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Nack with retry_after %v: %v, want INVALID_ARGUMENT", retry, err)
			}
		}
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
			RetryAfter: durationpb.New(server.MaxVisibility), Error: "down"}); err != nil {
			t.Fatalf("Nack with retry_after MaxVisibility after the refused ones: %v", err)
		}
	})
}

// TestNackErrorBoundedAt1KiB: a nack's error is kept with the delivery and handed to every
// later worker and dead-letter listing: up to 1024 bytes are taken, one more is refused.
func TestNackErrorBoundedAt1KiB(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)[0]
		_, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
			Error: strings.Repeat("x", 1025)})
		wantCode(t, err, codes.InvalidArgument)
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
			Error: strings.Repeat("x", 1024)}); err != nil {
			t.Fatalf("Nack with a 1024-byte error: %v", err)
		}
	})
}

// TestDeadLetterPagesDefaultTo100: a listing without a limit gets pages of 100 dead letters,
// with a token for the rest; a limit over 1000 is refused. An operator's tool that sets no
// limit must not be handed (and hold in memory) ten times the page it expects.
func TestDeadLetterPagesDefaultTo100(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		acceptSome(t, e, "work", 101)
		killAccepted(t, e)
		_, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{Limit: 1001})
		wantCode(t, err, codes.InvalidArgument)
		resp, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatalf("ListDeadLetters: %v", err)
		}
		if len(resp.GetDeliveries()) != 100 || resp.GetNextPageToken() == "" {
			t.Fatalf("ListDeadLetters without a limit: %d dead letters, next page token %q; want 100 and a token",
				len(resp.GetDeliveries()), resp.GetNextPageToken())
		}
	})
}

// TestZeroVisibilityMeansTheDefault: a visibility_timeout of zero, as a client that fills
// every field sends when it has no value, is the default 30 s, as an absent one is, on a lease
// and on an extension; not refused as under a second.
func TestZeroVisibilityMeansTheDefault(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{VisibilityTimeout: durationpb.New(0)})
		if err != nil {
			t.Fatalf("Lease with visibility_timeout 0: %v", err)
		}
		now := e.clock.Now()
		if got := resp.GetDeliveries(); len(got) != 1 || !got[0].GetLeasedUntil().AsTime().Equal(now.Add(server.DefaultVisibility)) {
			t.Fatalf("Lease with visibility_timeout 0 = %d deliveries, want one leased until now + %v", len(got), server.DefaultVisibility)
		}
		d := resp.GetDeliveries()[0]
		e.clock.Advance(10 * time.Second)
		ext, err := e.inbox.ExtendLease(t.Context(), &hookverifyv1.ExtendLeaseRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
			VisibilityTimeout: durationpb.New(0)})
		if err != nil || !ext.GetLeasedUntil().AsTime().Equal(e.clock.Now().Add(server.DefaultVisibility)) {
			t.Fatalf("ExtendLease with visibility_timeout 0 = %v, %v; want leased until now + %v", ext, err, server.DefaultVisibility)
		}
	})
}

// TestVisibilityUnderASecondRefused: a visibility_timeout under a second is refused: a lease
// that ends before the worker's answer can come back hands the delivery to the next poll while
// the first worker still runs it.
func TestVisibilityUnderASecondRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		_, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{VisibilityTimeout: durationpb.New(500 * time.Millisecond)})
		wantCode(t, err, codes.InvalidArgument)
		if got := lease(t, e, 1, time.Second); len(got) != 1 {
			t.Fatalf("Lease for 1s after the refused one leased %d, want the delivery", len(got))
		}
	})
}

// TestDiscardedRecordSaysItWasDiscarded: the record of a discarded delivery keeps why, marked
// as a discard before the operator's reason and the worker's last error ("discarded: REASON;
// last error: ..."), so whoever reads it before the sweep can tell a delivery given up from one
// that ran.
func TestDiscardedRecordSaysItWasDiscarded(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		if b.name != "sqlite" {
			t.Skip("reads the SQLite file")
		}
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)[0]
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), Error: "exit 2"}); err != nil {
			t.Fatalf("Nack: %v", err)
		}
		if _, err := e.inbox.Discard(t.Context(), &hookverifyv1.DiscardRequest{InboxId: d.GetInboxId(), Reason: "poison"}); err != nil {
			t.Fatalf("Discard: %v", err)
		}
		db, err := sql.Open("sqlite", e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var lastError string
		if err := db.QueryRowContext(t.Context(), `SELECT last_error FROM inbox WHERE id = ?`, d.GetInboxId()).Scan(&lastError); err != nil {
			t.Fatal(err)
		}
		if want := "discarded: poison; last error: exit 2"; lastError != want {
			t.Fatalf("discarded record's last error %q, want %q", lastError, want)
		}
	})
}

// TestDeadLetterExhaustedMovesEveryBatch: with --max-attempts lowered, the server moves every
// pending delivery with no attempts left to the dead letters, batch after batch, not only the
// first 1000: the rest would stay pending for ever, leased by no one, counted as work.
func TestDeadLetterExhaustedMovesEveryBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		if b.name != "sqlite" {
			t.Skip("sets attempts in the SQLite file")
		}
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		const n = 1001
		for i := range n {
			id := fmt.Sprint("in-", i)
			if _, err := e.store.Claim(t.Context(), storage.Delivery{InboxID: id, Scope: "work", EventID: "evt-" + id, EndpointID: "work",
				OperationKey: "op-" + id, Method: "POST", URL: "https://example.com/work", Body: []byte("{}"), ReceivedAt: epoch}); err != nil {
				t.Fatalf("Claim %s: %v", id, err)
			}
		}
		// Each nacked once under a higher limit, as before --max-attempts was lowered to 1.
		db, err := sql.Open("sqlite", e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(t.Context(), `UPDATE inbox SET attempts = 1`); err != nil {
			t.Fatal(err)
		}
		moved, err := e.srv.DeadLetterExhausted(t.Context(), e.store)
		if err != nil || moved != n {
			t.Fatalf("DeadLetterExhausted = %d, %v; want %d moved", moved, err, n)
		}
		stats, err := e.store.InboxStats(t.Context())
		if err != nil || len(stats) != 1 || stats[0].Pending != 0 || stats[0].Dead != n {
			t.Fatalf("InboxStats after DeadLetterExhausted = %+v, %v; want %d dead, none pending", stats, err, n)
		}
	})
}
