package server_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
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

// TestRevokeTokenDoesNotRepeatWhatIsNotAnID: an id is tok_ and exactly 16 hex digits; anything
// else that matches no token (here tok_ and 18 hex digits, too short to be taken for a token) is
// refused as NOT_FOUND without being repeated, as a pasted fragment of a token would be.
func TestRevokeTokenDoesNotRepeatWhatIsNotAnID(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	for _, id := range []string{"tok_0123456789abcdef01", "tok_0123456789ab"} {
		_, err := tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: id})
		refusedWith(t, "RevokeToken("+id+")", err, codes.NotFound)
		if strings.Contains(status.Convert(err).Message(), id) {
			t.Errorf("RevokeToken(%q) = %v; it repeats what is not a token id", id, err)
		}
	}
}

// TestTokenNameUpToTheLimit: a token name may be 1 to 200 bytes; 200 is accepted, 201 refused.
func TestTokenNameUpToTheLimit(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.admin)
	resp, err := tokens.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: strings.Repeat("n", 200), Scopes: []string{"verify:*"}})
	if err != nil || len(resp.GetToken().GetName()) != 200 {
		t.Fatalf("CreateToken with a 200-byte name = %v, %v; want it created", resp, err)
	}
	_, err = tokens.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: strings.Repeat("n", 201), Scopes: []string{"verify:*"}})
	refusedWith(t, "CreateToken with a 201-byte name", err, codes.InvalidArgument)
}

// TestBootstrapAfterRevocationStaysOff: once an admin token was stored, a bootstrap token is
// never stored again, even when every admin token is revoked and the variable now holds
// another token: revoking the bootstrap token sticks across restarts.
func TestBootstrapAfterRevocationStaysOff(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now
	first, second := "first-bootstrap-"+strings.Repeat("a", 32), "second-bootstrap-"+strings.Repeat("b", 32)
	if created, err := server.EnsureBootstrapToken(t.Context(), st, first, now); err != nil || !created {
		t.Fatalf("EnsureBootstrapToken on a fresh store = %v, %v; want true", created, err)
	}
	list, err := st.ListTokens(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("tokens after bootstrap: %v, %v", list, err)
	}
	if _, err := st.RevokeToken(t.Context(), list[0].ID, now()); err != nil {
		t.Fatal(err)
	}
	if created, err := server.EnsureBootstrapToken(t.Context(), st, second, now); err != nil || created {
		t.Fatalf("EnsureBootstrapToken with another token after revocation = %v, %v; want false", created, err)
	}
	if _, err := st.TokenByHash(t.Context(), server.HashToken(second)); err == nil {
		t.Error("the second bootstrap token was stored")
	}
}

// listedBeforeOthers is a store whose ListTokens answers as it did before another instance,
// starting at the same time, stored the bootstrap token.
type listedBeforeOthers struct {
	storage.Store
}

func (listedBeforeOthers) ListTokens(context.Context) ([]storage.Token, error) { return nil, nil }

// TestBootstrapByInstancesStartingAtOnce: instances starting together all find no admin token;
// the first stores the bootstrap token, and the others, finding its hash taken, report that
// they stored nothing, without an error that would stop them.
func TestBootstrapByInstancesStartingAtOnce(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	racing := listedBeforeOthers{st}
	token := "bootstrap-" + strings.Repeat("r", 32)
	if created, err := server.EnsureBootstrapToken(t.Context(), racing, token, time.Now); err != nil || !created {
		t.Fatalf("first instance: EnsureBootstrapToken = %v, %v; want true", created, err)
	}
	if created, err := server.EnsureBootstrapToken(t.Context(), racing, token, time.Now); err != nil || created {
		t.Fatalf("second instance: EnsureBootstrapToken = %v, %v; want false and no error", created, err)
	}
	if list, err := st.ListTokens(t.Context()); err != nil || len(list) != 1 {
		t.Fatalf("tokens stored: %v, %v; want the bootstrap token once", list, err)
	}
}

// TestUnusedTokenHasNoLastUse: a token never used, and one never revoked, show no last_used_at
// and no revoked_at (not the zero time) when created and in token list.
func TestUnusedTokenHasNoLastUse(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.admin)
	created, err := tokens.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: "unused", Scopes: []string{"verify:*"}})
	if err != nil {
		t.Fatal(err)
	}
	if tok := created.GetToken(); tok.GetLastUsedAt() != nil || tok.GetRevokedAt() != nil || tok.GetCreatedAt() == nil {
		t.Errorf("created token %v: want created_at only", tok)
	}
	list, err := tokens.ListTokens(ctx, &hookverifyv1.ListTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, tok := range list.GetTokens() {
		if tok.GetId() != created.GetToken().GetId() {
			continue
		}
		listed = true
		if tok.GetLastUsedAt() != nil || tok.GetRevokedAt() != nil {
			t.Errorf("listed unused token %v: want no last_used_at and no revoked_at", tok)
		}
	}
	if !listed {
		t.Errorf("token %s not listed", created.GetToken().GetId())
	}
}

// TestTokenIDRevealsNothingOfTheToken: a token's id is shown in token list, logs and the audit
// trail; it must not be drawn from the token's own random bytes, which would give away part
// of the secret.
func TestTokenIDRevealsNothingOfTheToken(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	for range 3 {
		created, err := tokens.CreateToken(withToken(t.Context(), e.admin), &hookverifyv1.CreateTokenRequest{Name: "edge", Scopes: []string{"verify:*"}})
		if err != nil {
			t.Fatal(err)
		}
		secret, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(created.GetBearerToken(), "hvt_"))
		if err != nil {
			t.Fatal(err)
		}
		digits := strings.TrimPrefix(created.GetToken().GetId(), "tok_")
		if len(digits) < 8 {
			t.Fatalf("token id %q: want tok_ and hex digits", created.GetToken().GetId())
		}
		if strings.Contains(hex.EncodeToString(secret), digits[:8]) {
			t.Fatalf("token id %s repeats bytes of its token", created.GetToken().GetId())
		}
	}
}

// TestTokenNameMustBeUTF8: CreateToken, called through gRPC or on the Server directly (an
// embedding program), refuses a name that is not UTF-8.
func TestTokenNameMustBeUTF8(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	_, err := e.srv.CreateToken(t.Context(), &hookverifyv1.CreateTokenRequest{Name: "edge \xff", Scopes: []string{"verify:*"}})
	wantCode(t, err, codes.InvalidArgument)
}

// TestRevokeByValueOfTheShortestBootstrapToken: a bootstrap token may be exactly 32
// characters; given to RevokeToken it is taken for the token it is, and revoked.
func TestRevokeByValueOfTheShortestBootstrapToken(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	short := strings.Repeat("k", 32)
	if err := server.CheckBootstrapToken(short); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateToken(t.Context(), storage.Token{ID: "tok_00000000000000bb", Name: "short", Hash: server.HashToken(short),
		Scopes: []string{"verify:*"}, CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	resp, err := hookverifyv1.NewTokenServiceClient(e.dial(t, nil)).RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: short})
	if err != nil || resp.GetToken().GetId() != "tok_00000000000000bb" || resp.GetToken().GetRevokedAt() == nil {
		t.Fatalf("RevokeToken(a 32-character token) = %v, %v; want tok_00000000000000bb revoked", resp, err)
	}
}
