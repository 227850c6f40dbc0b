package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// TestLeaseAndDeadLettersOpenNoSecrets: handing deliveries out redacts those stored before
// claim-time redaction where their endpoint's protocol carries the secret, which needs the
// endpoint's provider and options, not its secrets. Found through the endpoint cache's load,
// every lease and dead-letter listing of an instance that verifies nothing read and decrypted
// every secret of the endpoints it handed out once per cache TTL, and logged an error per
// secret that does not open (a master-key rotation under way) at the pace of the leases: what
// TestEmptyLeaseOpensNoSecrets keeps empty leases from doing.
func TestLeaseAndDeadLettersOpenNoSecrets(t *testing.T) {
	t.Parallel()
	e, st := countingEnv(t, func(o *server.Options) { o.CacheTTL = time.Minute; o.MaxAttempts = 1 })
	admin := e.start(t, st)
	admin.setup(t, githubProvider, "work")
	d := storage.Delivery{InboxID: "inbox-1", Scope: "work", EventID: "evt-1", EndpointID: "work", OperationKey: "op-1",
		Method: "POST", URL: "https://hooks.example.com/work", Body: []byte("{}"), ReceivedAt: e.clock.Now()}
	if r, err := st.Claim(t.Context(), d); err != nil || !r.Accepted {
		t.Fatalf("Claim: %+v, %v", r, err)
	}
	// A worker's instance: it has verified nothing, so its endpoint cache is empty.
	worker := e.start(t, st)

	before := st.reads()
	resp, err := worker.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{VisibilityTimeout: durationpb.New(time.Minute)})
	if err != nil || len(resp.GetDeliveries()) != 1 {
		t.Fatalf("Lease = %v, %v; want the delivery", resp, err)
	}
	leased := resp.GetDeliveries()[0]
	if _, err := worker.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: leased.GetInboxId(), LeaseToken: leased.GetLeaseToken(), Error: "poison"}); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	dead, err := worker.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
	if err != nil || len(dead.GetDeliveries()) != 1 {
		t.Fatalf("ListDeadLetters = %v, %v; want the delivery", dead, err)
	}
	if got := countsSince(before, st.reads()); got["ListSecrets work"] != 0 {
		t.Errorf("handing a delivery out read the secrets of its endpoint (%d ListSecrets): reads %v", got["ListSecrets work"], got)
	}
}

// TestSettleAnIDWithNULIsNotFound: an inbox id holding NUL names no delivery (ids are made by
// the server), and Requeue and Discard answered NOT_FOUND for one, as the other inbox calls do.
// Since they are recorded in the audit trail, the id went into the event's detail, which
// PostgreSQL's text cannot hold: the call failed INTERNAL and logged an unexpected storage
// error, on PostgreSQL only.
func TestSettleAnIDWithNULIsNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 1)
		_, err := e.inbox.Requeue(t.Context(), &hookverifyv1.RequeueRequest{InboxId: "in\x00x"})
		wantCode(t, err, codes.NotFound)
		_, err = e.inbox.Discard(t.Context(), &hookverifyv1.DiscardRequest{InboxId: "in\x00x", Reason: "poison"})
		wantCode(t, err, codes.NotFound)
	})
}

// TestStoredCredentialsRedactedByAnInstanceThatVerifiedNothing: a delivery stored with its
// secret (by a release before claim-time redaction) is redacted where its endpoint's options put
// the credential, also when handed out by an instance whose endpoint cache is empty, which reads
// the endpoint's row for it.
func TestStoredCredentialsRedactedByAnInstanceThatVerifiedNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "tok", Provider: "shared-token", Options: map[string]string{"header": "X-Hook-Token"}})
		const secret = "s3cret-token-value-0123456789"
		e.addSecret(t, "tok", secret)
		d := storage.Delivery{InboxID: "inbox-old", Scope: "tok", EventID: "evt-old", EndpointID: "tok", OperationKey: "op-old",
			Method: "POST", URL: "https://hooks.example.com/tok", Headers: []storage.Header{{Name: "x-hook-token", Value: secret}},
			Body: []byte("{}"), ReceivedAt: e.clock.Now()}
		if r, err := e.store.Claim(t.Context(), d); err != nil || !r.Accepted {
			t.Fatalf("Claim: %+v, %v", r, err)
		}
		worker := e.start(t, e.store)
		resp, err := worker.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{VisibilityTimeout: durationpb.New(time.Minute)})
		if err != nil || len(resp.GetDeliveries()) != 1 {
			t.Fatalf("Lease = %v, %v; want the delivery", resp, err)
		}
		for _, h := range resp.GetDeliveries()[0].GetHeaders() {
			if h.GetValue() != server.Redacted {
				t.Errorf("header %s = %q, want %s", h.GetName(), h.GetValue(), server.Redacted)
			}
		}
	})
}
