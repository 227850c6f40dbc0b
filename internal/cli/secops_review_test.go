package cli

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRekeyAgainstAnAuthenticatedServer runs the master-key runbook's step 2 where it matters
// most, on a server that requires callers to authenticate: rekey must send the token of
// $HOOKVERIFY_TOKEN (or --token-file) and use --ca/--cert/--key like every other command.
func TestRekeyAgainstAnAuthenticatedServer(t *testing.T) {
	t.Run("token", func(t *testing.T) {
		bootstrapToken := "bootstrap-" + strings.Repeat("r", 40)
		addr := startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: bootstrapToken})
		t.Setenv(tokenEnv, bootstrapToken)
		if code, out, errOut := run(t, "", "rekey", "--server", addr); code != 0 || !strings.Contains(errOut, "every secret is under mk_") {
			t.Fatalf("rekey with $%s: exit %d, stdout %q, stderr %q", tokenEnv, code, out, errOut)
		}
		t.Setenv(tokenEnv, "")
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(bootstrapToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := run(t, "", "rekey", "--server", addr, "--token-file", tokenFile); code != 0 {
			t.Fatalf("rekey with --token-file: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		dir := t.TempDir()
		ca, caKey := writeCA(t, dir)
		issueTo(t, dir, "server", pkix.Name{CommonName: "hookverify"}, ca, caKey, true)
		issueTo(t, dir, "ops", pkix.Name{CommonName: "ops"}, ca, caKey, false)
		scopes := filepath.Join(dir, "cert-scopes")
		if err := os.WriteFile(scopes, []byte("admin CN=ops\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		addr := startAuthServer(t, serveConfig{auth: authFlags{
			tlsCert: filepath.Join(dir, "server.pem"), tlsKey: filepath.Join(dir, "server.key"),
			clientCA: filepath.Join(dir, "ca.pem"), certScopes: scopes,
		}})
		code, out, errOut := run(t, "", "rekey", "--server", addr, "--ca", filepath.Join(dir, "ca.pem"),
			"--cert", filepath.Join(dir, "ops.pem"), "--key", filepath.Join(dir, "ops.key"), "--timeout", "5s")
		if code != 0 {
			t.Fatalf("rekey over mutual TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
}
