package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// newEnvWith is newEnv with adjusted server options.
func newEnvWith(t *testing.T, b backend, adjust func(*server.Options)) *env {
	t.Helper()
	dsn := b.newDatabase(t)
	st := openStore(t, b, dsn)
	e := newEnvOn(t, b, dsn, nil)
	e.options = adjust
	e.store = st
	e.instance = e.start(t, st)
	return e
}

// acceptSome makes an endpoint and gets n deliveries accepted on it, one second apart, and
// returns their answers in order.
func acceptSome(t *testing.T, e *env, endpointID string, n int) []*hookverifyv1.VerifyResponse {
	t.Helper()
	secret, _ := e.setup(t, githubProvider, endpointID)
	var out []*hookverifyv1.VerifyResponse
	for range n {
		out = append(out, e.accept(t, e.deliver(t, githubProvider, endpointID, eventID(githubProvider), secret)))
		e.clock.Advance(time.Second)
	}
	return out
}

func lease(t *testing.T, e *env, max int32, visibility time.Duration) []*hookverifyv1.InboxDelivery {
	t.Helper()
	resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{MaxDeliveries: max, VisibilityTimeout: durationpb.New(visibility)})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	return resp.GetDeliveries()
}

func TestInboxLeaseAckAndExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		accepted := acceptSome(t, e, "work", 3)

		first := lease(t, e, 2, time.Minute)
		if len(first) != 2 {
			t.Fatalf("leased %d, want 2", len(first))
		}
		for i, d := range first {
			if d.GetInboxId() != accepted[i].GetInboxId() || d.GetOperationKey() != accepted[i].GetOperationKey() || d.GetAttempts() != 1 || d.GetLeaseToken() == "" {
				t.Fatalf("lease %d = %v, want the oldest accepted delivery, attempt 1", i, d)
			}
			stored, err := e.store.GetDelivery(t.Context(), d.GetInboxId())
			if err != nil || string(stored.Body) != string(d.GetBody()) {
				t.Fatalf("leased body differs from the stored one (%v)", err)
			}
		}
		// The third is the only one left while the first two are leased.
		if rest := lease(t, e, 10, time.Minute); len(rest) != 1 || rest[0].GetInboxId() != accepted[2].GetInboxId() {
			t.Fatalf("second lease = %v, want only the third delivery", rest)
		}
		if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: first[0].GetInboxId(), LeaseToken: first[0].GetLeaseToken()}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		_, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: first[0].GetInboxId(), LeaseToken: first[0].GetLeaseToken()})
		wantCode(t, err, codes.FailedPrecondition)
		if more := lease(t, e, 10, time.Minute); len(more) != 0 {
			t.Fatalf("leased %v while every delivery is acked or leased", more)
		}

		// A worker that crashed: its lease expires and the delivery goes to another worker.
		e.clock.Advance(2 * time.Minute)
		again := lease(t, e, 10, time.Minute)
		if len(again) != 2 {
			t.Fatalf("after expiry leased %d, want the 2 unacked", len(again))
		}
		for _, d := range again {
			if d.GetAttempts() != 2 {
				t.Errorf("attempts %d, want 2", d.GetAttempts())
			}
			if d.GetInboxId() == first[1].GetInboxId() && d.GetLeaseToken() == first[1].GetLeaseToken() {
				t.Error("re-lease reused the old token")
			}
		}
		_, err = e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: first[1].GetInboxId(), LeaseToken: first[1].GetLeaseToken()})
		wantCode(t, err, codes.FailedPrecondition)

		stats, err := e.inbox.GetInboxStats(t.Context(), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil {
			t.Fatalf("GetInboxStats: %v", err)
		}
		if len(stats.GetEndpoints()) != 1 || stats.GetEndpoints()[0].GetLeased() != 2 || stats.GetEndpoints()[0].GetPending() != 0 {
			t.Fatalf("stats %v, want 2 leased, 0 pending", stats)
		}
	})
}

// TestInboxAckMany: one call acks several deliveries, each answered as Ack would answer it
// (a lost lease or an unknown delivery fails only its own result), counts the acks it did, and
// refuses a malformed request whole.
func TestInboxAckMany(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e := newEnvWith(t, b, func(o *server.Options) { o.Metrics = metrics })
		acceptSome(t, e, "work", 4)
		d := lease(t, e, 3, time.Minute)
		if len(d) != 3 {
			t.Fatalf("leased %d, want 3", len(d))
		}
		ack := func(d *hookverifyv1.InboxDelivery) *hookverifyv1.AckRequest {
			return &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}
		}
		resp, err := e.inbox.AckMany(t.Context(), &hookverifyv1.AckManyRequest{Acks: []*hookverifyv1.AckRequest{
			ack(d[0]),
			{InboxId: d[1].GetInboxId(), LeaseToken: "lease_wrong"},
			{InboxId: "nope", LeaseToken: d[2].GetLeaseToken()},
			ack(d[2]),
			ack(d[0]),
		}})
		if err != nil {
			t.Fatalf("AckMany: %v", err)
		}
		want := []struct {
			inboxID string
			code    codes.Code
		}{
			{d[0].GetInboxId(), codes.OK},
			{d[1].GetInboxId(), codes.FailedPrecondition},
			{"nope", codes.NotFound},
			{d[2].GetInboxId(), codes.OK},
			{d[0].GetInboxId(), codes.FailedPrecondition}, // the same ack again finds its lease ended
		}
		if len(resp.GetResults()) != len(want) {
			t.Fatalf("%d results, want %d", len(resp.GetResults()), len(want))
		}
		for i, w := range want {
			r := resp.GetResults()[i]
			if r.GetInboxId() != w.inboxID || codes.Code(r.GetCode()) != w.code || (w.code == codes.OK) != (r.GetMessage() == "") {
				t.Errorf("result %d = %v, want %s for %s, with a message unless OK", i, r, w.code, w.inboxID)
			}
		}
		// What a lone Ack says now of each agrees: acked twice is a lost lease, the wrong
		// token's delivery is still leased (and acks with its own token).
		_, err = e.inbox.Ack(t.Context(), ack(d[2]))
		wantCode(t, err, codes.FailedPrecondition)
		if _, err := e.inbox.Ack(t.Context(), ack(d[1])); err != nil {
			t.Fatalf("Ack of the delivery whose AckMany had the wrong token: %v", err)
		}
		stats, err := e.inbox.GetInboxStats(t.Context(), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil || len(stats.GetEndpoints()) != 1 || stats.GetEndpoints()[0].GetPending() != 1 || stats.GetEndpoints()[0].GetLeased() != 0 {
			t.Fatalf("stats %v (%v), want the fourth delivery pending and nothing leased", stats, err)
		}
		wantMetrics(t, e.srv, "hookverify_inbox_acks_total 3")

		rest := lease(t, e, 1, time.Minute)
		tooMany := make([]*hookverifyv1.AckRequest, 101)
		for i := range tooMany {
			tooMany[i] = ack(rest[0])
		}
		for name, req := range map[string]*hookverifyv1.AckManyRequest{
			"no acks":              {},
			"101 acks":             {Acks: tooMany},
			"an ack without id":    {Acks: []*hookverifyv1.AckRequest{ack(rest[0]), {LeaseToken: rest[0].GetLeaseToken()}}},
			"an ack without token": {Acks: []*hookverifyv1.AckRequest{ack(rest[0]), {InboxId: rest[0].GetInboxId()}}},
		} {
			_, err := e.inbox.AckMany(t.Context(), req)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: AckMany = %v, want INVALID_ARGUMENT", name, err)
			}
		}
		// A refused request acked nothing.
		if _, err := e.inbox.Ack(t.Context(), ack(rest[0])); err != nil {
			t.Fatalf("Ack after the refused AckMany calls: %v", err)
		}
	})
}

func TestInboxNackDeadLetterRequeueExtend(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 2 })
		acceptSome(t, e, "work", 1)

		d := lease(t, e, 1, time.Minute)[0]
		ext, err := e.inbox.ExtendLease(t.Context(), &hookverifyv1.ExtendLeaseRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), VisibilityTimeout: durationpb.New(10 * time.Minute)})
		if err != nil {
			t.Fatalf("ExtendLease: %v", err)
		}
		if !ext.GetLeasedUntil().AsTime().Equal(e.clock.Now().Add(10 * time.Minute)) {
			t.Fatalf("leased_until %v", ext.GetLeasedUntil().AsTime())
		}
		e.clock.Advance(5 * time.Minute) // past the first visibility, inside the extension
		if got := lease(t, e, 1, time.Minute); len(got) != 0 {
			t.Fatalf("an extended lease was handed out again: %v", got)
		}

		nack, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), RetryAfter: durationpb.New(time.Minute), Error: "payment API timed out"})
		if err != nil || nack.GetDeadLettered() {
			t.Fatalf("first Nack = %v, %v; want not dead", nack, err)
		}
		if got := lease(t, e, 1, time.Minute); len(got) != 0 {
			t.Fatal("a nacked delivery was leasable before retry_after")
		}
		e.clock.Advance(time.Minute)
		d2 := lease(t, e, 1, time.Minute)
		if len(d2) != 1 || d2[0].GetAttempts() != 2 || d2[0].GetLastError() != "payment API timed out" {
			t.Fatalf("second lease = %v", d2)
		}
		nack, err = e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d2[0].GetLeaseToken(), Error: "still failing"})
		if err != nil || !nack.GetDeadLettered() {
			t.Fatalf("last Nack = %v, %v; want dead-lettered", nack, err)
		}
		dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil || len(dead.GetDeliveries()) != 1 || dead.GetDeliveries()[0].GetInboxId() != d.GetInboxId() {
			t.Fatalf("ListDeadLetters = %v, %v", dead, err)
		}
		if got := lease(t, e, 1, time.Minute); len(got) != 0 {
			t.Fatal("a dead delivery was leased")
		}
		if _, err := e.inbox.Requeue(t.Context(), &hookverifyv1.RequeueRequest{InboxId: d.GetInboxId()}); err != nil {
			t.Fatalf("Requeue: %v", err)
		}
		wantLastAudit(t, e, "work", "inbox.requeue", "delivery "+d.GetInboxId())
		_, err = e.inbox.Requeue(t.Context(), &hookverifyv1.RequeueRequest{InboxId: d.GetInboxId()})
		wantCode(t, err, codes.NotFound)
		if got := lease(t, e, 1, time.Minute); len(got) != 1 || got[0].GetAttempts() != 1 {
			t.Fatalf("after requeue leased %v, want it back with attempts reset", got)
		}

		_, err = e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{MaxDeliveries: 1000})
		wantCode(t, err, codes.InvalidArgument)
		_, err = e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: "nope", LeaseToken: "lease_x"})
		wantCode(t, err, codes.NotFound)
	})
}

// wantLastAudit checks that the endpoint's last audit event is action, with detail, by the
// caller: settling a dead letter is recorded as admin changes are.
func wantLastAudit(t *testing.T, e *env, endpointID, action, detail string) {
	t.Helper()
	resp, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndpointId: endpointID, PageSize: 1000})
	if err != nil {
		t.Fatalf("ListAuditEvents: %v", err)
	}
	events := resp.GetEvents()
	if len(events) == 0 {
		t.Fatalf("no audit event for endpoint %q, want %s", endpointID, action)
	}
	last := events[len(events)-1]
	if last.GetAction() != action || last.GetDetail() != detail || last.GetActor() == "" || last.GetEndpointId() != endpointID {
		t.Fatalf("last audit event = %v; want %s on %s by the caller, detail %q", last, action, endpointID, detail)
	}
}

// TestInboxDiscard: a dead delivery that must never run is settled unrun. It is gone from the
// dead letters and from every lease, is never requeued, a redelivery of its event is still
// DUPLICATE with the same operation key, and retention deletes it from the discard on.
func TestInboxDiscard(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		secret, _ := e.setup(t, githubProvider, "work")
		req := e.deliver(t, githubProvider, "work", eventID(githubProvider), secret)
		first := e.accept(t, req)
		e.clock.Advance(time.Second)
		pending := e.accept(t, e.deliver(t, githubProvider, "work", eventID(githubProvider), secret))

		d := lease(t, e, 1, time.Minute)[0]
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), Error: "poison"}); err != nil {
			t.Fatalf("Nack: %v", err)
		}
		discard := func(inboxID, reason string) error {
			_, err := e.inbox.Discard(t.Context(), &hookverifyv1.DiscardRequest{InboxId: inboxID, Reason: reason})
			return err
		}
		for name, c := range map[string]struct {
			inboxID, reason string
			want            codes.Code
		}{
			"no id":         {"", "why", codes.InvalidArgument},
			"no reason":     {d.GetInboxId(), " ", codes.InvalidArgument},
			"long reason":   {d.GetInboxId(), strings.Repeat("x", 1025), codes.InvalidArgument},
			"NUL in reason": {d.GetInboxId(), "a\x00b", codes.InvalidArgument},
			"pending":       {pending.GetInboxId(), "why", codes.NotFound},
			"unknown":       {"inbox_nope", "why", codes.NotFound},
		} {
			if err := discard(c.inboxID, c.reason); status.Code(err) != c.want {
				t.Errorf("Discard, %s: %v, want %s", name, err, c.want)
			}
		}
		if err := discard(d.GetInboxId(), "charges a closed account: refunded by hand"); err != nil {
			t.Fatalf("Discard: %v", err)
		}
		wantLastAudit(t, e, "work", "inbox.discard", "delivery "+d.GetInboxId()+": charges a closed account: refunded by hand")
		if logs := string(e.logs.Bytes()); !strings.Contains(logs, `"msg":"dead delivery discarded"`) || !strings.Contains(logs, "refunded by hand") || !strings.Contains(logs, `"actor":`) {
			t.Errorf("the log does not record the discard with its reason and who did it:\n%s", logs)
		}
		wantCode(t, discard(d.GetInboxId(), "again"), codes.NotFound)
		_, err := e.inbox.Requeue(t.Context(), &hookverifyv1.RequeueRequest{InboxId: d.GetInboxId()})
		wantCode(t, err, codes.NotFound)
		dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil || len(dead.GetDeliveries()) != 0 {
			t.Fatalf("ListDeadLetters after Discard = %v, %v; want none", dead, err)
		}
		e.clock.Advance(time.Hour)
		if got := lease(t, e, 10, time.Minute); len(got) != 1 || got[0].GetInboxId() != pending.GetInboxId() {
			t.Fatalf("lease after Discard = %v, want only the pending delivery", got)
		}
		e.duplicate(t, req, first)
		stats, err := e.inbox.GetInboxStats(t.Context(), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil || len(stats.GetEndpoints()) != 1 || stats.GetEndpoints()[0].GetDead() != 0 || stats.GetEndpoints()[0].GetLeased() != 1 {
			t.Fatalf("GetInboxStats after Discard = %v, %v; want one leased, none dead", stats, err)
		}
	})
}

// TestLowerMaxAttemptsDeadLettersSpentPendingAtStart: a delivery nacked while --max-attempts
// was higher sits pending with more attempts than a restart's lower limit allows. No lease
// takes it (leases need attempts left), and Lease and Nack dead-letter only the deliveries
// they end, so the start-up step must move it to the dead letters; otherwise it stays neither
// leasable nor dead, for ever, and counts toward the pending backpressure limits.
func TestLowerMaxAttemptsDeadLettersSpentPendingAtStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 5 })
		acceptSome(t, e, "work", 1)
		var inboxID string
		for range 3 {
			d := lease(t, e, 1, time.Minute)
			if len(d) != 1 {
				t.Fatalf("leased %d, want 1", len(d))
			}
			inboxID = d[0].GetInboxId()
			if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: inboxID, LeaseToken: d[0].GetLeaseToken(), RetryAfter: durationpb.New(0), Error: "downstream down"}); err != nil {
				t.Fatalf("Nack: %v", err)
			}
		}

		// The operator restarts with --max-attempts 2; serve runs the start-up step.
		metrics := server.NewMetrics()
		e.options = func(o *server.Options) { o.MaxAttempts = 2; o.Metrics = metrics }
		e.instance = e.start(t, e.store)
		if n, err := e.srv.DeadLetterExhausted(t.Context(), e.store); err != nil || n != 1 {
			t.Fatalf("DeadLetterExhausted = %d, %v; want 1 moved", n, err)
		}
		if n, err := e.srv.DeadLetterExhausted(t.Context(), e.store); err != nil || n != 0 {
			t.Fatalf("second DeadLetterExhausted = %d, %v; want nothing left to move", n, err)
		}
		e.clock.Advance(time.Hour)

		if got := lease(t, e, 10, time.Minute); len(got) != 0 {
			t.Fatalf("leased %v with every attempt used", got)
		}
		dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatalf("ListDeadLetters: %v", err)
		}
		const why = "attempts used up: --max-attempts lowered to 2; last error: downstream down"
		if got := dead.GetDeliveries(); len(got) != 1 || got[0].GetInboxId() != inboxID || got[0].GetAttempts() != 3 || got[0].GetLastError() != why {
			t.Fatalf("dead letters %v, want %s with 3 attempts and last error %q", got, inboxID, why)
		}
		stats, err := e.inbox.GetInboxStats(t.Context(), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil {
			t.Fatalf("GetInboxStats: %v", err)
		}
		if got := stats.GetEndpoints(); len(got) != 1 || got[0].GetPending() != 0 || got[0].GetDead() != 1 {
			t.Fatalf("stats %v, want work with none pending and one dead", got)
		}
		wantMetrics(t, e.srv, `hookverify_inbox_dead_lettered_total{cause="max_attempts_lowered"} 1`)

		// Requeued, it gets the new limit's attempts afresh.
		if _, err := e.inbox.Requeue(t.Context(), &hookverifyv1.RequeueRequest{InboxId: inboxID}); err != nil {
			t.Fatalf("Requeue: %v", err)
		}
		if got := lease(t, e, 1, time.Minute); len(got) != 1 || got[0].GetAttempts() != 1 {
			t.Fatalf("after requeue leased %v, want it back with attempts reset", got)
		}
	})
}

// TestRunningServerDeadLettersSpentPendingHourly: in a rolling deploy that lowers
// --max-attempts, a server still on the old limit nacks a delivery back to pending after the
// new servers ran their start-up step. Once the old server is gone, no lease takes that
// delivery; a running server's retention loop must move it to the dead letters within an
// hour rather than leave it pending until the next restart.
func TestRunningServerDeadLettersSpentPendingHourly(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := spentUnderAnOldLimit(t, b)
		e.clock.Advance(time.Hour)
		waitDeadLetters(t, e, 1, 10*time.Second, "the delivery with no attempts left under the running server's limit was not dead-lettered an hour on")
	})
}

// spentUnderAnOldLimit sets up a rolling deploy that lowers --max-attempts from 5 to 2: the
// new server runs, its start-up step done and its retention loop on, while the old one nacks
// a delivery three times, then goes. The env returned calls the new server; the delivery is
// pending with no attempts left under its limit.
func spentUnderAnOldLimit(t *testing.T, b backend) *env {
	t.Helper()
	e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 5 })
	acceptSome(t, e, "work", 1)
	// e.instance is the old server.
	e.options = func(o *server.Options) { o.MaxAttempts = 2 }
	newServer := e.start(t, e.store)
	ctx, cancel := context.WithCancel(t.Context())
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		newServer.srv.RunRetention(ctx, server.Retention{Interval: 10 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-loopDone })
	time.Sleep(100 * time.Millisecond) // the loop has read the clock and runs
	for range 3 {
		d := lease(t, e, 1, time.Minute)
		if len(d) != 1 {
			t.Fatalf("old server leased %d, want 1", len(d))
		}
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d[0].GetInboxId(), LeaseToken: d[0].GetLeaseToken(), RetryAfter: durationpb.New(0), Error: "downstream down"}); err != nil {
			t.Fatalf("Nack: %v", err)
		}
	}
	e.instance = newServer
	return e
}

// TestBackpressure: at either inbox limit a new event is refused RESOURCE_EXHAUSTED with the
// 30 s hint RELIABILITY.md states, and not stored, while a redelivery of an accepted event is
// answered DUPLICATE, also by an instance that does not remember the claim (another instance,
// a restart, the claim cache's TTL gone by: the cache off here), from the store; once workers
// drain the inbox new events are accepted again.
func TestBackpressure(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*server.Options)
	}{
		{"per endpoint", func(o *server.Options) { o.MaxPendingPerEndpoint = 2 }},
		{"total", func(o *server.Options) { o.MaxPendingTotal = 2 }},
		{"per endpoint, redeliveries from the store", func(o *server.Options) { o.MaxPendingPerEndpoint = 2; o.ClaimCacheSize = -1 }},
		{"total, redeliveries from the store", func(o *server.Options) { o.MaxPendingTotal = 2; o.ClaimCacheSize = -1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				e := newEnvWith(t, b, c.set)
				secret, _ := e.setup(t, githubProvider, "busy")
				first := e.accept(t, e.deliver(t, githubProvider, "busy", "evt-a", secret))
				e.accept(t, e.deliver(t, githubProvider, "busy", "evt-b", secret))
				e.srv.RefreshInboxDepth(t.Context())

				_, err := e.call(t, e.deliver(t, githubProvider, "busy", "evt-c", secret))
				wantCode(t, err, codes.ResourceExhausted)
				if hint, _ := retryHint(err); hint != 30*time.Second {
					t.Fatalf("RESOURCE_EXHAUSTED with retry hint %v, want 30s: %v", hint, status.Convert(err).Details())
				}
				if n := e.count(t); n != 2 {
					t.Fatalf("%d deliveries stored, want 2: a refused one must not be stored", n)
				}
				// A redelivery of an accepted event is still answered as a duplicate.
				e.duplicate(t, e.deliver(t, githubProvider, "busy", "evt-a", secret), first)
				e.clock.Advance(time.Minute) // GitHub signs no time, but the claim must not depend on it
				e.duplicate(t, e.deliver(t, githubProvider, "busy", "evt-a", secret), first)
				if n := e.count(t); n != 2 {
					t.Fatalf("%d deliveries stored after the redeliveries, want 2", n)
				}

				// Work drains the inbox; new events are accepted again.
				for _, d := range lease(t, e, 10, time.Minute) {
					if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
						t.Fatal(err)
					}
				}
				e.srv.RefreshInboxDepth(t.Context())
				e.accept(t, e.deliver(t, githubProvider, "busy", "evt-c", secret))
			})
		})
	}
}

func TestOperationalHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		dsn := b.newDatabase(t)
		e := newEnvOn(t, b, dsn, nil)
		e.options = func(o *server.Options) { o.Metrics = metrics }
		e.instance = e.start(t, nil)
		web := httptest.NewServer(e.srv.HTTPHandler())
		t.Cleanup(web.Close)
		get := func(path string) (int, string) {
			resp, err := http.Get(web.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		if code, _ := get("/healthz"); code != 200 {
			t.Fatalf("/healthz = %d", code)
		}
		if code, _ := get("/readyz"); code != 503 {
			t.Fatalf("/readyz before storage = %d, want 503", code)
		}
		st := openStore(t, b, dsn)
		e.store = st
		e.srv.SetStore(st)
		if code, _ := get("/readyz"); code != 200 {
			t.Fatalf("/readyz with storage = %d, want 200", code)
		}
		acceptSome(t, e, "seen", 1)
		e.reject(t, withHeader(e.deliver(t, githubProvider, "seen", "evt-x", "wrong"), "X-GitHub-Event", "push"), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)
		e.srv.RefreshInboxDepth(context.Background())
		_, body := get("/metrics")
		for _, want := range []string{
			`hookverify_verdicts_total{endpoint="seen",provider="github",reason="",verdict="accepted"} 1`,
			`hookverify_verdicts_total{endpoint="seen",provider="github",reason="signature_mismatch",verdict="rejected"} 1`,
			`hookverify_inbox_pending{endpoint="seen"} 1`,
			`hookverify_inbox_oldest_pending_age_seconds{endpoint="seen"}`,
			`hookverify_grpc_requests_total{code="OK",method="/hookverify.v1.VerifierService/Verify"}`,
			`hookverify_storage_claim_duration_seconds_count 1`,
			// One accepted delivery: one batch of one claim, committed.
			`hookverify_storage_claim_batch_size_count 1`,
			`hookverify_storage_claim_batch_size_sum 1`,
			`hookverify_storage_claim_batch_duration_seconds_count 1`,
			`hookverify_storage_claim_batch_failures_total 0`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// TestInboxIDsAreTimeOrdered: both stores ask for time-ordered inbox ids (UUIDv7, see
// storage.InboxIDSource), so new inbox rows append to the primary key's index: the database
// itself orders them as they were made (a lease takes deliveries visible at the same instant in
// id order).
func TestInboxIDsAreTimeOrdered(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		secret, _ := e.setup(t, githubProvider, "ordered")
		var made []string
		for i := range 5 {
			id := e.accept(t, e.deliver(t, githubProvider, "ordered", fmt.Sprintf("evt-%d", i), secret)).GetInboxId()
			if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
				t.Fatalf("inbox id %q (%v): want a UUIDv7", id, err)
			}
			made = append(made, id)
		}
		var leased []string
		for _, d := range lease(t, e, 5, time.Minute) {
			leased = append(leased, d.GetInboxId())
		}
		if !slices.Equal(leased, made) {
			t.Fatalf("the database orders the inbox ids %v, made in the order %v", leased, made)
		}
	})
}

func TestRetention(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		secret, _ := e.setup(t, githubProvider, "kept")
		done := e.deliver(t, githubProvider, "kept", "evt-done", secret)
		waiting := e.deliver(t, githubProvider, "kept", "evt-waiting", secret)
		firstDone := e.accept(t, done)
		e.clock.Advance(time.Second) // so evt-done is the oldest, leased first
		firstWaiting := e.accept(t, waiting)
		d := lease(t, e, 1, time.Minute)[0] // the oldest: evt-done
		if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
			t.Fatal(err)
		}
		r := server.Retention{DedupeWindow: 30 * 24 * time.Hour, AckedRetention: 7 * 24 * time.Hour, Batch: 1}

		e.clock.Advance(time.Hour)
		if res, err := e.srv.SweepOnce(t.Context(), r); err != nil || res.InboxDeleted != 0 || res.ClaimsDeleted != 0 {
			t.Fatalf("early sweep = %+v, %v; want nothing deleted", res, err)
		}
		e.clock.Advance(8 * 24 * time.Hour)
		if res, err := e.srv.SweepOnce(t.Context(), r); err != nil || res.InboxDeleted != 1 || res.ClaimsDeleted != 0 {
			t.Fatalf("sweep after the inbox retention = %+v, %v; want the acked record only", res, err)
		}
		// Inside the dedupe window the acked event is still a duplicate, its record gone or not.
		e.duplicate(t, e.deliver(t, githubProvider, "kept", "evt-done", secret), firstDone)

		e.clock.Advance(30 * 24 * time.Hour)
		if res, err := e.srv.SweepOnce(t.Context(), r); err != nil || res.ClaimsDeleted != 1 {
			t.Fatalf("sweep after the dedupe window = %+v, %v; want the finished claim deleted", res, err)
		}
		// The claim of a delivery still waiting for a worker is never deleted.
		e.duplicate(t, e.deliver(t, githubProvider, "kept", "evt-waiting", secret), firstWaiting)
		// Past the window, the finished event is new again: providers stopped retrying long ago.
		e.accept(t, e.deliver(t, githubProvider, "kept", "evt-done", secret))
	})
}

// TestInboxLeaseExpiryMetrics: expired leases are counted when the next lease takes them over
// or dead-letters them, and dead letters are counted by cause.
func TestInboxLeaseExpiryMetrics(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 2; o.Metrics = metrics })
		acceptSome(t, e, "work", 2)

		lease(t, e, 2, time.Minute) // a worker takes both and crashes
		e.clock.Advance(2 * time.Minute)
		again := lease(t, e, 2, time.Minute) // attempt 2 of 2, taken over from the expired leases
		if len(again) != 2 {
			t.Fatalf("after expiry leased %d, want 2", len(again))
		}
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: again[0].GetInboxId(),
			LeaseToken: again[0].GetLeaseToken(), Error: "boom"}); err != nil {
			t.Fatalf("Nack: %v", err)
		}
		e.clock.Advance(2 * time.Minute) // the other's last lease expires too
		if got := lease(t, e, 2, time.Minute); len(got) != 0 {
			t.Fatalf("leased %v with every attempt used", got)
		}

		wantMetrics(t, e.srv,
			"hookverify_inbox_lease_expiries_total 3",
			"hookverify_inbox_redeliveries_total 2",
			`hookverify_inbox_dead_lettered_total{cause="nack"} 1`,
			`hookverify_inbox_dead_lettered_total{cause="lease_expired"} 1`,
		)
	})
}

// wantMetrics fails the test unless /metrics of srv has each of the lines.
func wantMetrics(t *testing.T, srv *server.Server, lines ...string) {
	t.Helper()
	web := httptest.NewServer(srv.HTTPHandler())
	defer web.Close()
	resp, err := http.Get(web.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range lines {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestLeaseAnswerFitsAClientsMessageLimit: a lease of several large deliveries answered them
// all in one message, whatever its size. Past the caller's receive limit (4 MiB in gRPC's
// clients unless raised; 34 MiB in hookverify's own) the call failed on the caller's side
// after the server had committed the lease: every delivery of it stayed leased under a token
// nobody had, unrun, with an attempt spent, and the worker's next lease did the same to the
// next ones, until they went to the dead letters without ever reaching a worker. A lease
// stops adding deliveries at a size budget instead (the oldest is leased whatever its size),
// and the others wait for the next lease.
func TestLeaseAnswerFitsAClientsMessageLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		const n = 8
		acceptLarge(t, e, n)
		seen := map[string]bool{}
		for range n {
			// The harness's client keeps gRPC's default receive limit of 4 MiB.
			resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{MaxDeliveries: n, VisibilityTimeout: durationpb.New(time.Hour)})
			if err != nil {
				t.Fatalf("Lease of %d deliveries of 1 MB each, %d leased so far: %v", n, len(seen), err)
			}
			for _, d := range resp.GetDeliveries() {
				if seen[d.GetInboxId()] || d.GetAttempts() != 1 {
					t.Fatalf("delivery %s leased again (attempt %d)", d.GetInboxId(), d.GetAttempts())
				}
				seen[d.GetInboxId()] = true
			}
			if len(seen) == n {
				break
			}
		}
		if len(seen) != n {
			t.Errorf("leased %d of %d deliveries", len(seen), n)
		}
	})
}

// acceptLarge gets n deliveries of about 1 MB each (just under an endpoint's default limit)
// accepted on a new endpoint, one second apart.
func acceptLarge(t *testing.T, e *env, n int) {
	t.Helper()
	secret, _ := e.setup(t, githubProvider, "gh-big")
	pad := strings.Repeat("x", 1000_000)
	for i := range n {
		body := []byte(fmt.Sprintf(`{"action":"opened","number":%d,"pad":%q}`, i, pad))
		e.accept(t, sign(t, githubProvider, "gh-big", eventID(githubProvider), body, e.clock.Now(), secret))
		e.clock.Advance(time.Second)
	}
}

// TestDeadLettersAnswerFitsAClientsMessageLimit: ListDeadLetters read up to 1,000 dead
// deliveries, bodies included, into the server's memory and one answer (up to 32 GB with
// 32 MiB bodies), which the caller then refused: an operator could not see the dead letters of
// an endpoint with large bodies, and the listing could take the server's memory. Like a lease,
// it stops at a size budget, the oldest listed whatever its size.
func TestDeadLettersAnswerFitsAClientsMessageLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		const n = 8
		acceptLarge(t, e, n)
		// Each leased once, at its only attempt; the lease after they expire moves them to the
		// dead letters.
		for range n {
			lease(t, e, 1, time.Minute)
		}
		e.clock.Advance(time.Hour)
		if got := lease(t, e, 1, time.Minute); len(got) != 0 {
			t.Fatalf("leased %d deliveries with no attempts left", len(got))
		}
		// The harness's client keeps gRPC's default receive limit of 4 MiB.
		resp, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatalf("ListDeadLetters of %d dead deliveries of 1 MB each: %v", n, err)
		}
		if got := len(resp.GetDeliveries()); got < 1 || got >= n {
			t.Errorf("listed %d of %d dead letters of 1 MB each, want at least one and fewer than all", got, n)
		}
	})
}

// queued is a store whose leases and lease extensions wait, before their transaction runs,
// while the clock moves on by wait: as they wait behind other batches for SQLite's one writer,
// a lease lane or a connection of the pool.
type queued struct {
	storage.Store
	clock *clock
	wait  time.Duration
}

func (q queued) Lease(ctx context.Context, req storage.LeaseRequest) (storage.LeaseResult, error) {
	q.clock.Advance(q.wait)
	return q.Store.Lease(ctx, req)
}

func (q queued) ExtendLease(ctx context.Context, req storage.ExtendRequest) (time.Time, error) {
	q.clock.Advance(q.wait)
	return q.Store.ExtendLease(ctx, req)
}

// TestLeaseTakenWhenItRuns: a lease that waited for its turn still lasts the visibility the
// worker asked for, from when it was taken, not from when the server received the call: a
// worker asking for 30 s must not get 10 because its lease waited 20.
func TestLeaseTakenWhenItRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		const waited = 20 * time.Second
		e.instance = e.start(t, queued{Store: e.store, clock: e.clock, wait: waited})
		asked := e.clock.Now()
		got := lease(t, e, 1, 30*time.Second)
		if len(got) != 1 {
			t.Fatalf("leased %d deliveries, want 1", len(got))
		}
		if until, want := got[0].GetLeasedUntil().AsTime(), asked.Add(waited+30*time.Second); !until.Equal(want) {
			t.Errorf("leased until %s, want %s: 30 s from when the lease ran, %s after it was asked for", until, want, waited)
		}
	})
}

// TestExtendLeaseTakenWhenItRuns: an extension that waited for its turn lasts the visibility
// the worker asked for from when it ran, and the answer says the end that was stored: a
// worker asking for 30 s more must not get 10 because its extension waited 20, nor be told an
// end the store does not hold (a store keeps microseconds).
func TestExtendLeaseTakenWhenItRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)[0]
		// The nanoseconds are more than a store keeps: the answer must say the stored end.
		const waited = 20*time.Second + 700*time.Nanosecond
		e.instance = e.start(t, queued{Store: e.store, clock: e.clock, wait: waited})
		asked := e.clock.Now()
		ext, err := e.inbox.ExtendLease(t.Context(), &hookverifyv1.ExtendLeaseRequest{InboxId: d.GetInboxId(),
			LeaseToken: d.GetLeaseToken(), VisibilityTimeout: durationpb.New(30 * time.Second)})
		if err != nil {
			t.Fatalf("ExtendLease: %v", err)
		}
		want := asked.Add(waited + 30*time.Second).Truncate(time.Microsecond)
		if until := ext.GetLeasedUntil().AsTime(); !until.Equal(want) {
			t.Errorf("answered leased until %s, want %s: 30 s from when the extension ran, %s after it was asked for", until, want, waited)
		}
		stats := inboxStatsOf(t, e)
		if len(stats) != 1 || !stats[0].EarliestLeaseEnd.Equal(want) {
			t.Errorf("stored lease end %+v, want %s", stats, want)
		}
	})
}

// inboxStatsOf is the store's inbox stats.
func inboxStatsOf(t *testing.T, e *env) []storage.EndpointInboxStats {
	t.Helper()
	stats, err := e.store.(storage.InboxStore).InboxStats(t.Context())
	if err != nil {
		t.Fatalf("InboxStats: %v", err)
	}
	return stats
}

// TestEmptyLeaseNamesUnknownEndpoints: a worker whose --endpoint is mistyped gets empty leases
// like one whose inbox is empty, and would wait for ever; an empty lease names the endpoint ids
// asked for that no endpoint has, and only those (an existing endpoint with an empty inbox is
// not one).
func TestEmptyLeaseNamesUnknownEndpoints(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		e.setup(t, githubProvider, "quiet")
		leaseOf := func(ids ...string) *hookverifyv1.LeaseResponse {
			t.Helper()
			resp, err := e.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{EndpointIds: ids, VisibilityTimeout: durationpb.New(time.Minute)})
			if err != nil {
				t.Fatalf("Lease: %v", err)
			}
			return resp
		}
		if resp := leaseOf("quiet", "wrok"); len(resp.GetDeliveries()) != 0 || !slices.Equal(resp.GetUnknownEndpointIds(), []string{"wrok"}) {
			t.Fatalf("lease of an empty endpoint and a typo = %v, want nothing leased and the typo named", resp)
		}
		if resp := leaseOf("work", "wrok"); len(resp.GetDeliveries()) != 1 || len(resp.GetUnknownEndpointIds()) != 0 {
			t.Fatalf("lease that got a delivery = %v, want it and no unknown ids", resp)
		}
		if resp := leaseOf(); len(resp.GetUnknownEndpointIds()) != 0 {
			t.Fatalf("lease of every endpoint = %v, want no unknown ids", resp)
		}
	})
}

// waitDeadLetters waits up to within for the dead letters to number want (the retention
// loop moves them in the background), and fails with why if they do not.
func waitDeadLetters(t *testing.T, e *env, want int, within time.Duration, why string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatalf("ListDeadLetters: %v", err)
		}
		if len(dead.GetDeliveries()) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEmptyLeaseOpensNoSecrets: an empty lease names the endpoint ids that name no endpoint,
// which needs to know whether each exists, not its secrets. Checked through the endpoint cache's
// load, every idle poll of a worker (each --idle, 1 s by default) read and decrypted every
// secret of its endpoints once per cache TTL, on an instance that may verify nothing for them,
// and logged an error per secret that does not open (a master-key rotation under way) at the
// pace of the polls. An id asked for twice is named once.
func TestEmptyLeaseOpensNoSecrets(t *testing.T) {
	t.Parallel()
	e, st := countingEnv(t, func(o *server.Options) { o.CacheTTL = time.Minute })
	srv := e.start(t, st)
	srv.setup(t, githubProvider, "quiet")

	before := st.reads()
	resp, err := srv.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{EndpointIds: []string{"quiet", "wrok", "wrok"},
		VisibilityTimeout: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	if len(resp.GetDeliveries()) != 0 || !slices.Equal(resp.GetUnknownEndpointIds(), []string{"wrok"}) {
		t.Fatalf("lease = %v, want nothing leased and the typo named once", resp)
	}
	got := countsSince(before, st.reads())
	if got["ListSecrets quiet"] != 0 {
		t.Errorf("an empty lease read the secrets of its endpoint (%d ListSecrets): reads %v", got["ListSecrets quiet"], got)
	}
}
