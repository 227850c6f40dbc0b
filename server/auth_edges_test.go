package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// TestNegativeTokenCacheTTLLooksEveryTokenUp: a negative TokenCacheTTL means no token cache,
// so a token revoked through another instance (here, straight in the store) is refused on the
// very next call, not once a cached entry expires.
func TestNegativeTokenCacheTTLLooksEveryTokenUp(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uncached := hookverifyv1.NewVerifierServiceClient(e.dialAddr(t, e.startInstance(t, -1), nil))
	ctx := withToken(t.Context(), e.tokens["verify-acme"])
	_, err := uncached.Verify(ctx, verifyReq("acme-orders"))
	allowed(t, "Verify before revocation", err)
	if _, err := e.store.RevokeToken(t.Context(), e.ids["verify-acme"], time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = uncached.Verify(ctx, verifyReq("acme-orders"))
	refusedWith(t, "Verify right after another instance revoked the token", err, codes.Unauthenticated)
}

// TestBootstrapTokenIsPrintableASCII: DEL (0x7f) is not printable, and a bootstrap token
// holding it is refused like one holding a space or a control character.
func TestBootstrapTokenIsPrintableASCII(t *testing.T) {
	for _, bad := range []string{"\x7f", " ", "\x1f", "é"} {
		token := strings.Repeat("a", 40) + bad
		if err := server.CheckBootstrapToken(token); err == nil {
			t.Errorf("CheckBootstrapToken(40 letters and %q) = nil, want an error", bad)
		}
	}
	if err := server.CheckBootstrapToken(strings.Repeat("~", 32)); err != nil {
		t.Errorf("CheckBootstrapToken(32 tildes) = %v, want nil", err)
	}
}

// TestPrincipalSeenByHandlers: the Principal set for a call (what an interceptor or handler
// after authentication reads with PrincipalFrom) names the caller and says how it
// authenticated: "token:<id>" by "token", "cert:<subject>" by "mtls".
func TestPrincipalSeenByHandlers(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	var mu sync.Mutex
	var seen []server.Principal
	addr := e.startInstance(t, authCacheTTL, grpc.ChainUnaryInterceptor(
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			mu.Lock()
			seen = append(seen, server.PrincipalFrom(ctx))
			mu.Unlock()
			return handler(ctx, req)
		}))
	last := func() server.Principal {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return server.Principal{}
		}
		return seen[len(seen)-1]
	}

	_, err := hookverifyv1.NewVerifierServiceClient(e.dialAddr(t, addr, nil)).Verify(withToken(t.Context(), e.tokens["verify-acme"]), verifyReq("acme-orders"))
	allowed(t, "Verify with a token", err)
	if got, want := last(), (server.Principal{Name: "token:" + e.ids["verify-acme"], Method: "token"}); got != want {
		t.Errorf("principal of a token caller = %+v, want %+v", got, want)
	}

	cert := e.ca.issue(t, edgeSubject, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), false)
	_, err = hookverifyv1.NewVerifierServiceClient(e.dialAddr(t, addr, &cert)).Verify(t.Context(), verifyReq("acme-orders"))
	allowed(t, "Verify with a client certificate", err)
	if got, want := last(), (server.Principal{Name: "cert:" + edgeSubject.String(), Method: "mtls"}); got != want {
		t.Errorf("principal of a certificate caller = %+v, want %+v", got, want)
	}
}

// TestCertificateNotYetValidIsRefused: validity is checked on every call against the server's
// clock, at both ends: a connection whose leaf is not yet valid at the server's time (a clock
// set back) is refused, as one whose leaf expired is.
func TestCertificateNotYetValidIsRefused(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	cert := e.ca.issue(t, edgeSubject, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), false)
	client := hookverifyv1.NewVerifierServiceClient(e.dial(t, &cert))
	_, err := client.Verify(t.Context(), verifyReq("acme-orders"))
	allowed(t, "Verify within the validity period", err)
	e.clock.Advance(-2 * time.Hour)
	_, err = client.Verify(t.Context(), verifyReq("acme-orders"))
	refusedWith(t, "Verify before the certificate's NotBefore", err, codes.Unauthenticated)
}

// TestRevokedTokenUseIsNotRecorded: token list's last_used_at is the last accepted use; calls
// refused with a revoked token do not move it.
func TestRevokedTokenUseIsNotRecorded(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	admin := withToken(t.Context(), e.admin)
	created, err := tokens.CreateToken(admin, &hookverifyv1.CreateTokenRequest{Name: "never used", Scopes: []string{"verify:*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.RevokeToken(admin, &hookverifyv1.RevokeTokenRequest{Id: created.GetToken().GetId()}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	_, err = hookverifyv1.NewVerifierServiceClient(e.dial(t, nil)).Verify(withToken(t.Context(), created.GetBearerToken()), verifyReq("acme-orders"))
	refusedWith(t, "Verify with the revoked token", err, codes.Unauthenticated)
	got, err := e.store.TokenByHash(t.Context(), server.HashToken(created.GetBearerToken()))
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastUsedAt.IsZero() {
		t.Errorf("a token never accepted has last_used_at %v after a call refused as revoked, want none", got.LastUsedAt)
	}
}

// TestStoredScopeThatNoLongerParsesDropsOnlyItself: a stored scope that no longer parses is
// ignored; the token's other scopes still apply.
func TestStoredScopeThatNoLongerParsesDropsOnlyItself(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	token := "hvt_" + strings.Repeat("S", 43)
	if err := e.store.CreateToken(t.Context(), storage.Token{ID: "tok_00000000000000aa", Name: "old scopes", Hash: server.HashToken(token),
		Scopes: []string{"verify:no/longer/valid", "verify:acme-*"}, CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	verifier := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil))
	_, err := verifier.Verify(withToken(t.Context(), token), verifyReq("acme-orders"))
	allowed(t, "Verify within the scope stored after one that no longer parses", err)
	_, err = verifier.Verify(withToken(t.Context(), token), verifyReq("globex-orders"))
	refusedWith(t, "Verify outside every scope", err, codes.PermissionDenied)
}

// TestTokenLookupOutageIsUnavailable: a valid token that cannot be looked up because the store
// is down is answered UNAVAILABLE (retry later), not UNAUTHENTICATED, and the failure is not
// cached: the token works on the first call once the store is back.
func TestTokenLookupOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	e, st := newAuthEnvWithOutage(t)
	verifier := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.tokens["verify-acme"])
	st.down.Store(true)
	_, err := verifier.Verify(ctx, verifyReq("acme-orders"))
	refusedWith(t, "Verify while the token cannot be looked up", err, codes.Unavailable)
	st.down.Store(false)
	_, err = verifier.Verify(ctx, verifyReq("acme-orders"))
	allowed(t, "Verify once the store is back", err)
}

// TestPermissionRefusalNamesTheCaller: a call refused permission was made by an authenticated
// caller, and its refusal line names it (token:<id>), so that the trail says who tried.
func TestPermissionRefusalNamesTheCaller(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	_, err := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil)).Verify(withToken(t.Context(), e.tokens["verify-acme"]), verifyReq("globex-orders"))
	refusedWith(t, "Verify out of scope", err, codes.PermissionDenied)
	for _, line := range strings.Split(string(e.logs.Bytes()), "\n") {
		var l struct{ Msg, Code, Principal string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "call refused" && l.Code == "PermissionDenied" {
			if want := "token:" + e.ids["verify-acme"]; l.Principal != want {
				t.Errorf("refusal line names principal %q, want %q", l.Principal, want)
			}
			return
		}
	}
	t.Error("no refusal line for the call refused permission")
}

// TestRefusalMessagesSayWhichRefusal: a caller without a valid credential is told that
// authentication is required (and how to send a token); an authenticated one out of scope is
// told that permission is denied. The two are never swapped.
func TestRefusalMessagesSayWhichRefusal(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	verifier := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil))
	_, err := verifier.Verify(t.Context(), verifyReq("acme-orders"))
	refusedWith(t, "Verify without credentials", err, codes.Unauthenticated)
	if msg := status.Convert(err).Message(); !strings.HasPrefix(msg, "authentication required") || !strings.Contains(msg, "Bearer") {
		t.Errorf("unauthenticated message %q: want it to say authentication is required and how", msg)
	}
	_, err = verifier.Verify(withToken(t.Context(), e.tokens["verify-acme"]), verifyReq("globex-orders"))
	refusedWith(t, "Verify out of scope", err, codes.PermissionDenied)
	if msg := status.Convert(err).Message(); !strings.HasPrefix(msg, "permission denied") {
		t.Errorf("permission denied message %q: want it to say permission is denied", msg)
	}
}

// TestBearerSchemeIsCaseInsensitive: the authorization scheme is case-insensitive (RFC 9110):
// "bearer" and "BEARER" carry a token as "Bearer" does.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	verifier := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil))
	for _, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", scheme+" "+e.tokens["verify-acme"])
		_, err := verifier.Verify(ctx, verifyReq("acme-orders"))
		allowed(t, "Verify with scheme "+scheme, err)
	}
}
