package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// deadLetterFor makes the env's delivery of endpoint a dead letter, through the store.
func deadLetterFor(t *testing.T, e *authEnv, endpoint string) string {
	t.Helper()
	ib := e.store.(storage.InboxStore)
	now := e.clock.Now()
	res, err := ib.Lease(t.Context(), storage.LeaseRequest{InboxFilter: storage.InboxFilter{EndpointIDs: []string{endpoint}},
		Max: 1, Visibility: time.Minute, MaxAttempts: 10, LeaseToken: "lease-" + endpoint, Now: now, Clock: e.clock.Now})
	if err != nil || len(res.Deliveries) != 1 {
		t.Fatalf("lease %s: %v, %v", endpoint, res, err)
	}
	dead, err := ib.Nack(t.Context(), res.Deliveries[0].InboxID, "lease-"+endpoint, now, 1, "boom", now)
	if err != nil || !dead {
		t.Fatalf("nack %s: %v %v", endpoint, dead, err)
	}
	return res.Deliveries[0].InboxID
}

func TestScopedDeadLetters(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	inbox := hookverifyv1.NewInboxServiceClient(e.dial(t, nil))
	globex := deadLetterFor(t, e, "globex-orders")
	acme := deadLetterFor(t, e, "acme-orders")
	scoped := withToken(t.Context(), e.tokens["inbox-acme"])
	admin := withToken(t.Context(), e.tokens["admin"])

	// Out of scope dead letter and missing one: the same denial.
	for _, id := range []string{globex, "inbox-missing"} {
		_, err := inbox.Requeue(scoped, &hookverifyv1.RequeueRequest{InboxId: id})
		refusedWith(t, "requeue "+id, err, codes.PermissionDenied)
		_, err = inbox.Discard(scoped, &hookverifyv1.DiscardRequest{InboxId: id, Reason: "x"})
		refusedWith(t, "discard "+id, err, codes.PermissionDenied)
	}
	// Listing with every sort of filter sees acme's only.
	for _, req := range []*hookverifyv1.ListDeadLettersRequest{
		{EndpointIds: []string{"acme-orders"}},
		{EndpointIds: []string{"acme-orders", "acme-billing"}},
		{EndpointIds: []string{"acme-orders"}, DedupeScopes: []string{"globex-orders"}},
	} {
		resp, err := inbox.ListDeadLetters(scoped, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range resp.GetDeliveries() {
			if d.GetEndpointId() != "acme-orders" {
				t.Errorf("scoped listing %v shows %s", req, d.GetEndpointId())
			}
		}
	}
	// A page token of an admin listing of another endpoint: refused, not followed.
	resp, err := inbox.ListDeadLetters(admin, &hookverifyv1.ListDeadLettersRequest{Limit: 1})
	if err != nil || resp.GetNextPageToken() == "" {
		t.Fatalf("admin listing: %v %v", resp, err)
	}
	_, err = inbox.ListDeadLetters(scoped, &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{"acme-orders"}, PageToken: resp.GetNextPageToken()})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("foreign page token: %v", err)
	}
	_, err = inbox.Requeue(scoped, &hookverifyv1.RequeueRequest{InboxId: acme})
	allowed(t, "requeue own", err)
	if err != nil {
		t.Errorf("requeue own: %v", err)
	}
	st, err := inbox.GetInboxStats(scoped, &hookverifyv1.GetInboxStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.GetEndpoints() {
		if s.GetEndpointId() == "globex-orders" {
			t.Errorf("stats show globex")
		}
	}
}

func TestRevokeByValueAtOnce(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	conn := e.dial(t, nil)
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	tokens := hookverifyv1.NewTokenServiceClient(conn)
	ctx := withToken(t.Context(), e.tokens["verify-acme"])
	_, err := verifier.Verify(ctx, verifyReq("acme-orders"))
	allowed(t, "before", err)
	if _, err := tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: e.tokens["verify-acme"]}); err != nil {
		t.Fatal(err)
	}
	_, err = verifier.Verify(ctx, verifyReq("acme-orders"))
	refusedWith(t, "after", err, codes.Unauthenticated)
	// the bootstrap token revoking itself by value
	if _, err := tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: e.admin}); err != nil {
		t.Fatal(err)
	}
	_, err = tokens.ListTokens(withToken(t.Context(), e.admin), &hookverifyv1.ListTokensRequest{})
	refusedWith(t, "bootstrap after", err, codes.Unauthenticated)
}

// lostRevokeAnswer is a store whose RevokeToken commits and then reports a failure, as a
// PostgreSQL COMMIT whose answer is lost with the connection does.
type lostRevokeAnswer struct {
	storage.Store
}

func (s lostRevokeAnswer) RevokeToken(ctx context.Context, id string, at time.Time) (storage.Token, error) {
	if _, err := s.Store.RevokeToken(ctx, id, at); err != nil {
		return storage.Token{}, err
	}
	return storage.Token{}, fmt.Errorf("commit answer lost: %w", storage.ErrUnavailable)
}

// TestRevocationWhoseAnswerIsLostStopsAtOnce: a revocation that committed though the
// store reported a failure (the admin sees UNAVAILABLE, token list shows it revoked) must
// still stop the token at once on the revoking instance, not after --token-cache-ttl.
func TestRevocationWhoseAnswerIsLostStopsAtOnce(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newAuthEnvOn(t, lostRevokeAnswer{st})
	// A long cache, as --token-cache-ttl may be set: "at once" must not mean "within it".
	addr := e.startInstance(t, time.Hour)
	conn := e.dialAddr(t, addr, nil)
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	tokens := hookverifyv1.NewTokenServiceClient(conn)
	ctx := withToken(t.Context(), e.tokens["verify-acme"])
	_, err = verifier.Verify(ctx, verifyReq("acme-orders"))
	allowed(t, "Verify before revocation", err)

	_, err = tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: e.ids["verify-acme"]})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("RevokeToken whose answer is lost: %v, want UNAVAILABLE", err)
	}
	if tok, err := st.TokenByHash(t.Context(), server.HashToken(e.tokens["verify-acme"])); err != nil || tok.RevokedAt.IsZero() {
		t.Fatalf("the revocation did not commit: %v, %v", tok, err)
	}
	_, err = verifier.Verify(ctx, verifyReq("acme-orders"))
	refusedWith(t, "Verify on the revoking instance right after a revocation that committed", err, codes.Unauthenticated)
}

// TestRevokeNotFoundDoesNotRepeatWhatWasGiven: an id that is no token id (tok_ and 16 hex
// digits) may be part of a token pasted short; NOT_FOUND must not repeat it. A token id is
// named, so the operator sees which one was not found.
func TestRevokeNotFoundDoesNotRepeatWhatWasGiven(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	admin := withToken(t.Context(), e.admin)
	const partOfAToken = "s3cr3t-paste-cut-short"
	_, err := tokens.RevokeToken(admin, &hookverifyv1.RevokeTokenRequest{Id: partOfAToken})
	if status.Code(err) != codes.NotFound || strings.Contains(err.Error(), partOfAToken) {
		t.Errorf("RevokeToken(%q) = %v; want NOT_FOUND without the value", partOfAToken, err)
	}
	_, err = tokens.RevokeToken(admin, &hookverifyv1.RevokeTokenRequest{Id: "tok_0123456789abcdef"})
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "tok_0123456789abcdef") {
		t.Errorf("RevokeToken of an unknown token id = %v; want NOT_FOUND naming it", err)
	}
}
