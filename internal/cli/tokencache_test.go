package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestTokenCacheTTLZeroMeansNoCache: `serve --token-cache-ttl 0`, like `--cache-ttl 0`, leaves
// no window in which a token revoked through another instance still works there: every call
// looks its token up. (The flag's 0 used to reach server.AuthConfig unchanged, where zero
// means the 5 s default.)
func TestTokenCacheTTLZeroMeansNoCache(t *testing.T) {
	var sc serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sc.register(fs)
	if err := fs.Parse([]string{"--require-auth", "--token-cache-ttl", "0"}); err != nil {
		t.Fatal(err)
	}
	sc.bootstrapToken = "bootstrap-" + strings.Repeat("r", 40)
	dataDir := t.TempDir()
	keyring := testpki.Keyring(t)
	start := func() string { return startAuthServerOn(t, sc, keyring, dataDir) }
	here, there := start(), start() // two instances, one store
	dial := func(addr string) *grpc.ClientConn {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	as := func(token string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
	}
	tokensHere := hookverifyv1.NewTokenServiceClient(dial(here))
	created, err := tokensHere.CreateToken(as(sc.bootstrapToken), &hookverifyv1.CreateTokenRequest{Name: "ops", Scopes: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	adminThere := hookverifyv1.NewAdminServiceClient(dial(there))
	if _, err := adminThere.ListEndpoints(as(created.GetBearerToken()), &hookverifyv1.ListEndpointsRequest{}); err != nil {
		t.Fatalf("ListEndpoints on the other instance before revocation: %v", err)
	}
	if _, err := tokensHere.RevokeToken(as(sc.bootstrapToken), &hookverifyv1.RevokeTokenRequest{Id: created.GetToken().GetId()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	_, err = adminThere.ListEndpoints(as(created.GetBearerToken()), &hookverifyv1.ListEndpointsRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("with --token-cache-ttl 0, a token revoked through another instance still works here: ListEndpoints = %v, want Unauthenticated", err)
	}
}

// TestServeRefusesANegativeTokenCacheTTL: every other cache TTL and size of serve is refused
// out of range as a usage error (exit 2, TestLongRunningCommandsUsageErrorsExit2), as README's
// exit statuses promise for "a value out of range". --token-cache-ttl -1s was taken in
// silence as "no cache" (offWhenZero) and serve went on to listen.
func TestServeRefusesANegativeTokenCacheTTL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out syncbuf.Buffer
	err := runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--require-auth", "--token-cache-ttl", "-1s",
	})
	if ctx.Err() != nil {
		t.Fatalf("serve --token-cache-ttl -1s was still serving after 10 s; log:\n%s", out.String())
	}
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error()+out.String(), "--token-cache-ttl") {
		t.Fatalf("serve --token-cache-ttl -1s: %v; want a usage error naming --token-cache-ttl; log:\n%s", err, out.String())
	}
	if code, _, errOut := run(t, "", "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token-cache-ttl", "-5s"); code != 2 || !strings.Contains(errOut, "--token-cache-ttl") {
		t.Errorf("serve --token-cache-ttl -5s: exit %d, stderr %q; want 2 naming the flag", code, errOut)
	}
}
