package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// testErrorAnswers checks the error answers of the contract that the other categories leave
// out: the invalid arguments each method refuses, the answers of a lease's calls once the
// delivery is acked or dead, administrative writes whose audit event cannot be recorded,
// calls whose caller has gone, and calls given nothing to do. Every refusal must write
// nothing.
func testErrorAnswers(t *testing.T, h harness) {
	t.Run("an endpoint without id or dedupe scope is refused and nothing is written", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		noScope := newEndpoint("ep-2")
		noScope.DedupeScope = ""
		wantErr(t, s.CreateEndpoint(t.Context(), noScope), storage.ErrInvalid, "CreateEndpoint without a dedupe scope")
		wantErr(t, s.CreateEndpoint(t.Context(), newEndpoint("")), storage.ErrInvalid, "CreateEndpoint without an id")
		wantErr(t, s.UpdateEndpoint(t.Context(), newEndpoint("")), storage.ErrInvalid, "UpdateEndpoint without an id")
		noScope.ID = "ep-1"
		noScope.MaxBodyBytes = 7
		wantErr(t, s.UpdateEndpoint(t.Context(), noScope), storage.ErrInvalid, "UpdateEndpoint without a dedupe scope")
		_, err := s.ModifyEndpoint(t.Context(), "ep-1", func(e storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
			e.DedupeScope, e.MaxBodyBytes = "", 8
			return e, "", nil
		})
		wantErr(t, err, storage.ErrInvalid, "ModifyEndpoint to no dedupe scope")
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, newEndpoint("ep-1"), got, "endpoint after refused writes")
		wantSame(t, []string{"ep-1"}, endpointIDs(t, s), "endpoints after refused writes")
	})

	t.Run("a secret without id is refused and nothing is written or ended", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		first := newSecret("ep-1", "sec-1", at(0))
		addSecret(t, s, first)
		wantErr(t, s.AddSecret(t.Context(), newSecret("ep-1", "", at(time.Second)), nil), storage.ErrInvalid, "AddSecret without an id")
		_, err := s.RotateSecret(t.Context(), newSecret("ep-1", "", at(time.Second)), at(time.Hour), nil)
		wantErr(t, err, storage.ErrInvalid, "RotateSecret without an id")
		wantSame(t, []storage.Secret{first}, listSecrets(t, s, "ep-1"), "secrets after refused writes")
	})

	t.Run("invalid lease, nack, listing and sweep requests are refused and change nothing", func(t *testing.T) {
		s := inboxFixture(t, h)
		t0 := at(time.Hour)
		d := deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		for name, req := range map[string]storage.LeaseRequest{
			"Max 0":         {Max: 0, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok-1", Now: t0},
			"Max -1":        {Max: -1, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok-1", Now: t0},
			"MaxAttempts 0": {Max: 1, Visibility: time.Minute, MaxAttempts: 0, LeaseToken: "tok-1", Now: t0},
			"Visibility 0":  {Max: 1, Visibility: 0, MaxAttempts: 3, LeaseToken: "tok-1", Now: t0},
			"no token":      {Max: 1, Visibility: time.Minute, MaxAttempts: 3, Now: t0},
		} {
			r, err := s.Lease(t.Context(), req)
			wantErr(t, err, storage.ErrInvalid, "Lease with "+name)
			if len(r.Deliveries) != 0 {
				t.Fatalf("Lease with %s refused yet handed out %q", name, inboxIDs(r.Deliveries))
			}
		}
		got := lease(t, s, leaseReq("tok-1", t0, 10))
		wantSame(t, []storage.LeasedDelivery{leasedAs(d, "tok-1", 1, t0.Add(time.Minute), d.ReceivedAt, "")}, got,
			"lease after refused leases (no attempt spent)")
		_, err := s.Nack(t.Context(), "d1", "tok-1", t0, 0, "failed", t0)
		wantErr(t, err, storage.ErrInvalid, "Nack with maxAttempts 0")
		must(t, extendTo(t, s, "d1", "tok-1", t0.Add(time.Hour), t0), "ExtendLease after a refused Nack")
		_, _, err = s.ListDeadLetters(t.Context(), storage.InboxFilter{}, storage.DeadLetterKey{}, 0, 0)
		wantErr(t, err, storage.ErrInvalid, "ListDeadLetters with limit 0")
		_, err = s.ListEndpointsPage(t.Context(), "", -1)
		wantErr(t, err, storage.ErrInvalid, "ListEndpointsPage with limit -1")
		_, err = s.ListAuditEvents(t.Context(), storage.AuditFilter{Limit: -1})
		wantErr(t, err, storage.ErrInvalid, "ListAuditEvents with limit -1")
		ack(t, s, "d1", "tok-1", t0)
		for _, batch := range []int{0, -1} {
			r, err := s.Sweep(t.Context(), storage.SweepRequest{AckedBefore: t0.Add(time.Hour), ClaimsBefore: t0.Add(time.Hour), Batch: batch})
			wantErr(t, err, storage.ErrInvalid, "Sweep with Batch below 1")
			wantSame(t, storage.SweepResult{}, r, "refused Sweep's counts")
		}
		getDelivery(t, s, "d1")
	})

	t.Run("a lease's calls after its ack answer ErrAlreadyAcked", func(t *testing.T) {
		s := inboxFixture(t, h)
		t0 := at(time.Hour)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		lease(t, s, leaseReq("tok-1", t0, 1))
		ack(t, s, "d1", "tok-1", t0)
		_, err := s.Nack(t.Context(), "d1", "tok-1", t0, 3, "failed", t0)
		wantErr(t, err, storage.ErrAlreadyAcked, "Nack after the ack")
		wantErr(t, s.GiveBack(t.Context(), "d1", "tok-1", t0, "stopping", t0), storage.ErrAlreadyAcked, "GiveBack after the ack")
		wantErr(t, extendTo(t, s, "d1", "tok-1", t0.Add(time.Hour), t0), storage.ErrAlreadyAcked, "ExtendLease after the ack")
		wantErr(t, s.Requeue(t.Context(), "d1", t0), storage.ErrNotFound, "Requeue of an acked delivery")
		wantErr(t, s.Discard(t.Context(), "d1", "discarded", t0), storage.ErrNotFound, "Discard of an acked delivery")
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(time.Hour), 10)), "lease after the calls")
	})

	t.Run("a dead delivery's old lease answers ErrLeaseLost, not ErrAlreadyAcked", func(t *testing.T) {
		s := inboxFixture(t, h)
		t0 := at(time.Hour)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		req := leaseReq("tok-1", t0, 1)
		req.MaxAttempts = 1
		lease(t, s, req)
		if !nack(t, s, "d1", "tok-1", t0, 1, t0) {
			t.Fatal("Nack at the last attempt did not report dead")
		}
		lost := func(err error, what string) {
			t.Helper()
			wantErr(t, err, storage.ErrLeaseLost, what)
			if errors.Is(err, storage.ErrAlreadyAcked) {
				t.Fatalf("%s: %v says acked; the delivery is dead, its work not done", what, err)
			}
		}
		lost(s.Ack(t.Context(), "d1", "tok-1", t0), "Ack of a dead delivery")
		lost(s.AckMany(t.Context(), []storage.LeaseRef{{InboxID: "d1", LeaseToken: "tok-1"}}, t0)[0], "AckMany of a dead delivery")
		_, err := s.Nack(t.Context(), "d1", "tok-1", t0, 1, "again", t0)
		lost(err, "Nack of a dead delivery")
		lost(s.GiveBack(t.Context(), "d1", "tok-1", t0, "stopping", t0), "GiveBack of a dead delivery")
		lost(extendTo(t, s, "d1", "tok-1", t0.Add(time.Hour), t0), "ExtendLease of a dead delivery")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters after the calls", "d1")
	})

	t.Run("an audit event without id or action is refused and its change does not happen", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		addSecret(t, s, newSecret("ep-1", "sec-1", at(0)))
		createToken(t, s, newToken("tok-1", "ci", at(0)))
		for _, ev := range []storage.AuditEvent{{ID: "a1", At: at(time.Second)}, {Action: "endpoint.update", At: at(time.Second)}} {
			ctx := storage.WithAuditEvent(t.Context(), ev)
			changed := newEndpoint("ep-1")
			changed.MaxBodyBytes = 7
			wantErr(t, s.CreateEndpoint(ctx, newEndpoint("ep-2")), storage.ErrInvalid, "CreateEndpoint")
			wantErr(t, s.UpdateEndpoint(ctx, changed), storage.ErrInvalid, "UpdateEndpoint")
			_, err := s.ModifyEndpoint(ctx, "ep-1", func(e storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
				e.MaxBodyBytes = 8
				return e, "max body 8", nil
			})
			wantErr(t, err, storage.ErrInvalid, "ModifyEndpoint")
			wantErr(t, s.AddSecret(ctx, newSecret("ep-1", "sec-2", at(time.Second)), nil), storage.ErrInvalid, "AddSecret")
			_, err = s.RotateSecret(ctx, newSecret("ep-1", "sec-3", at(time.Second)), at(time.Hour), nil)
			wantErr(t, err, storage.ErrInvalid, "RotateSecret")
			_, err = s.RetireSecret(ctx, "ep-1", "sec-1", at(time.Hour))
			wantErr(t, err, storage.ErrInvalid, "RetireSecret")
			_, err = s.ResealSecret(ctx, "ep-1", "sec-1", "master-1", "master-2", []byte("x"))
			wantErr(t, err, storage.ErrInvalid, "ResealSecret")
			wantErr(t, s.CreateToken(ctx, newToken("tok-2", "ci", at(0))), storage.ErrInvalid, "CreateToken")
			_, err = s.RevokeToken(ctx, "tok-1", at(time.Hour))
			wantErr(t, err, storage.ErrInvalid, "RevokeToken")
		}
		wantSame(t, []string{"ep-1"}, endpointIDs(t, s), "endpoints")
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, newEndpoint("ep-1"), got, "endpoint")
		wantSame(t, []storage.Secret{newSecret("ep-1", "sec-1", at(0))}, listSecrets(t, s, "ep-1"), "secrets")
		wantSame(t, []storage.Token{newToken("tok-1", "ci", at(0))}, listTokens(t, s), "tokens")
		if got := listAudit(t, s, storage.AuditFilter{Limit: 10}); len(got) != 0 {
			t.Fatalf("audit events after refused writes: %+v", got)
		}
	})

	t.Run("every call whose caller has gone is unavailable and writes nothing", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		addSecret(t, s, newSecret("ep-1", "sec-1", at(0)))
		createToken(t, s, newToken("tok-1", "ci", at(0)))
		claim(t, s, newDelivery("ep-1", "ep-1", "evt-1", "inbox-1"))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for name, err := range closedCalls(ctx, s) {
			if !errors.Is(err, storage.ErrUnavailable) {
				t.Errorf("%s with a canceled context: got error %v, want one wrapping %v", name, err, storage.ErrUnavailable)
			}
		}
		wantSame(t, []string{"ep-1"}, endpointIDs(t, s), "endpoints")
		wantSame(t, []storage.Secret{newSecret("ep-1", "sec-1", at(0))}, listSecrets(t, s, "ep-1"), "secrets")
		wantSame(t, []storage.Token{newToken("tok-1", "ci", at(0))}, listTokens(t, s), "tokens")
		wantCount(t, s, "", 1)
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, newEndpoint("ep-1"), got, "endpoint")
		wantIDs(t, lease(t, s, leaseReq("tok-2", at(time.Hour), 10)), "lease after the canceled calls", "inbox-1")
	})

	t.Run("a ping whose deadline has passed is unavailable", func(t *testing.T) {
		s := h.fresh(t)
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		wantErr(t, s.Ping(ctx), storage.ErrUnavailable, "Ping past its deadline")
		must(t, s.Ping(t.Context()), "Ping after")
	})

	t.Run("calls given nothing to do answer nothing", func(t *testing.T) {
		s := claimStore(t, h)
		if errs := s.AckMany(t.Context(), nil, at(0)); len(errs) != 0 {
			t.Fatalf("AckMany of no acks = %v, want no errors", errs)
		}
		m, err := s.DeliveryEndpoints(t.Context(), nil)
		must(t, err, "DeliveryEndpoints of no ids")
		if len(m) != 0 {
			t.Fatalf("DeliveryEndpoints of no ids = %v", m)
		}
		must(t, s.MarkSecretsUsed(t.Context(), nil), "MarkSecretsUsed of no uses")
		wantCount(t, s, "no-such-scope", 0)
	})
}

// endpointIDs lists the ids of the stored endpoints.
func endpointIDs(t *testing.T, s storage.Store) []string {
	t.Helper()
	list, err := s.ListEndpoints(t.Context())
	must(t, err, "ListEndpoints")
	ids := make([]string, len(list))
	for i, e := range list {
		ids[i] = e.ID
	}
	return ids
}
