package client_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestDialRefusesAKeyFileWithoutItsCertificate: WithTLSFiles with a client key but no
// certificate (or the reverse) is a mistyped mutual-TLS setup: Dial refuses it, rather than
// connecting without a client certificate and leaving the server to refuse every handshake.
func TestDialRefusesAKeyFileWithoutItsCertificate(t *testing.T) {
	t.Parallel()
	// Never read as a key or a certificate: the pair is refused first. (The reverse case,
	// a certificate without key, would also fail later, reading the pair; the first pins
	// the check itself.)
	key := filepath.Join(t.TempDir(), "client.key")
	if err := os.WriteFile(key, []byte("not read: its other half is missing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][3]string{
		"key without certificate": {"", "", key},
		"certificate without key": {"", key, ""},
	} {
		conn, err := client.Dial("verifier.internal:7700", client.WithTLSFiles(files[0], files[1], files[2]))
		if err == nil {
			conn.Close()
			t.Errorf("%s: Dial accepted it", name)
		}
	}
}

// TestTokenOfATLSConnectionNeverTravelsInClear: with WithTLS, the API token is sent only over
// a secure transport; plaintext credentials passed after it through WithGRPCOptions (which take
// precedence) are refused (gRPC's own check, at Dial) rather than carry the token in clear.
func TestTokenOfATLSConnectionNeverTravelsInClear(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	addr := f.start(t)
	conn, err := client.Dial(addr,
		client.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}),
		client.WithToken("hv_tok_secret"),
		client.WithRetry(client.RetryPolicy{MaxAttempts: 1}),
		client.WithGRPCOptions(grpc.WithTransportCredentials(insecure.NewCredentials())),
	)
	if err == nil {
		defer conn.Close()
		if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err == nil {
			t.Error("Verify succeeded over plaintext with a token meant for TLS")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, md := range f.metadata {
		if got := md.Get("authorization"); len(got) > 0 {
			t.Errorf("call %d reached the server in clear with authorization %q", i, got)
		}
	}
}

// TestTokenGoesInClearToLoopbackTargetsOfAnyForm: a loopback target may carry the token in
// clear whatever its form: "localhost" in any case (host names are case-insensitive) and a
// dns:/// target of a loopback address.
func TestTokenGoesInClearToLoopbackTargetsOfAnyForm(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"LocalHost:7700", "dns:///127.0.0.1:7700", "dns:///localhost:7700", "passthrough:///[::1]:7700"} {
		conn, err := client.Dial(target, client.WithToken("hv_tok_123"))
		if err != nil {
			t.Errorf("Dial(%q) with a token: %v", target, err)
			continue
		}
		conn.Close()
	}
}

// TestPublicURLBaseWithAnEmptyQueryRefused: a base ending in "?" makes every forwarded URL
// "https://h?/hooks/ep", which no provider called: refused like any other query.
func TestPublicURLBaseWithAnEmptyQueryRefused(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"https://hooks.example.com?", "https://hooks.example.com/edge?"} {
		if err := client.CheckPublicURLBase(base); err == nil {
			t.Errorf("CheckPublicURLBase(%q) accepted", base)
		}
	}
}
