package cli

import (
	"crypto/x509/pkix"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/internal/testpki"
)

// TestConnectionFailuresSayWhatToFix: a call that never reaches a server fails with gRPC's
// transport text ("connection error: desc = \"transport: ...\"", or for a host name that does
// not resolve only "no children to pick from"), which names neither the flag to fix nor the
// fix. Each such failure keeps its status code on the first line, for scripts, and gets a
// hint line naming the cause and the flag.
func TestConnectionFailuresSayWhatToFix(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	dir := t.TempDir()
	tlsAddr := startMutualTLSServer(t, dir, "admin CN=ops\n", pkix.Name{CommonName: "ops"})
	otherCA := filepath.Join(dir, "other-ca.pem")
	testpki.NewCA(t, "another CA").WriteCA(t, otherCA)
	plainRemote, _ := startTestServer(t)

	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"nothing listens", []string{"--server", closed}, []string{"hint:", "nothing listens at " + closed, "--server"}},
		{"host does not resolve", []string{"--server", "no-such-host.invalid:7700"}, []string{"hint:", "no-such-host.invalid", "resolve"}},
		{"CA that did not sign the server's certificate", []string{"--server", tlsAddr, "--ca", otherCA}, []string{"hint:", "--ca", "not signed"}},
		{"TLS to a plaintext server", append(plainRemote, "--ca", otherCA), []string{"hint:", "does not speak TLS", "--ca"}},
	} {
		code, out, errOut := run(t, "", append([]string{"endpoint", "list", "--timeout", "10s"}, c.args...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "Unavailable") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and the code Unavailable", c.name, code, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, errOut, w)
			}
		}
	}
}

// TestUnauthenticatedSaysWhatWasSent: a server that requires a caller answers "authentication
// required" alike to no token, a wrong one and an unknown certificate. The CLI knows what it
// sent: with nothing, it says that no token was sent and where one goes; with a client
// certificate and no token, that the server did not accept the certificate.
func TestUnauthenticatedSaysWhatWasSent(t *testing.T) {
	t.Setenv(tokenEnv, "")
	addr := startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: "bootstrap-" + strings.Repeat("n", 40)})
	code, _, errOut := run(t, "", "endpoint", "list", "--server", addr)
	if code != 1 || !strings.Contains(errOut, "Unauthenticated") || !strings.Contains(errOut, "no API token was sent") || !strings.Contains(errOut, "$"+tokenEnv) {
		t.Errorf("no token: exit %d, stderr %q; want 1, Unauthenticated and a hint that no token was sent", code, errOut)
	}
	t.Setenv(tokenEnv, "hvt_wrong")
	if code, _, errOut := run(t, "", "endpoint", "list", "--server", addr); code != 1 || strings.Contains(errOut, "no API token was sent") {
		t.Errorf("wrong token: exit %d, stderr %q; want 1 without the no-token hint", code, errOut)
	}
	if strings.Contains(errOut, "hvt_wrong") {
		t.Errorf("the token shows in the error: %q", errOut)
	}

	t.Setenv(tokenEnv, "")
	dir := t.TempDir()
	tlsAddr := startMutualTLSServer(t, dir, "admin CN=ops\n", pkix.Name{CommonName: "ops"})
	stranger := testpki.NewCA(t, "a CA the server does not know")
	cert, key := testpki.WriteKeyPair(t, dir, "stranger", stranger.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "ops"}}))
	code, _, errOut = run(t, "", "endpoint", "list", "--server", tlsAddr, "--ca", filepath.Join(dir, "ca.pem"), "--cert", cert, "--key", key)
	if code != 1 || !strings.Contains(errOut, "Unauthenticated") || !strings.Contains(errOut, "--cert") || !strings.Contains(errOut, "--client-ca") {
		t.Errorf("unknown client certificate: exit %d, stderr %q; want 1 and a hint that the server did not accept --cert", code, errOut)
	}
}

// TestSecretFromAWindowsFileIsTheSecret: a secret saved by a Windows editor starts with a
// UTF-8 byte order mark and may end in CRLF; neither is part of the secret, and a stored BOM
// would make every delivery fail as BAD_SIGNATURE with nothing to show why (the fingerprint
// differs from the provider's secret's). Two lines on standard input (an old and a new secret
// in one file) are not one secret: refused, naming what was wrong, without the secret.
func TestSecretFromAWindowsFileIsTheSecret(t *testing.T) {
	fingerprint := func(stdin string) (int, string, string) {
		return run(t, stdin, "secret", "fingerprint", "--endpoint", "e")
	}
	_, want, _ := fingerprint("whsec_abc")
	for _, in := range []string{"whsec_abc\n", "whsec_abc\r\n", "\ufeffwhsec_abc", "\ufeffwhsec_abc\r\n"} {
		if code, got, errOut := fingerprint(in); code != 0 || got != want {
			t.Errorf("secret %q: exit %d, fingerprint %q (%s), want %q", in, code, got, errOut, want)
		}
	}
	for _, in := range []string{"whsec_old\nwhsec_new\n", "whsec_old\r\nwhsec_new"} {
		code, out, errOut := fingerprint(in)
		if code != 1 || out != "" || !strings.Contains(errOut, "one line") || strings.Contains(errOut, "whsec_") {
			t.Errorf("secret %q: exit %d, stdout %q, stderr %q; want 1 and a refusal of several lines that quotes no secret", in, code, out, errOut)
		}
	}
}

// TestSignRefusesASecretOfTheWrongForm: sign --secret of a form the provider never shows (a
// Standard Webhooks secret that is not whsec_ + base64) is a value of the wrong form on the
// command line: exit 2, as README's exit codes say, naming --secret.
func TestSignRefusesASecretOfTheWrongForm(t *testing.T) {
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"id":"evt_1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ provider, secret string }{
		{"standard-webhooks", "not base64!!"},
		{"stripe", "whsec_x "},
		{"sendgrid", "abc"},
	} {
		code, out, errOut := run(t, "", "sign", "--provider", c.provider, "--secret", c.secret, "--body", body, "--id", "msg_1")
		if code != 2 || out != "" || !strings.Contains(errOut, "--secret") || strings.Contains(errOut, c.secret) {
			t.Errorf("sign --provider %s --secret %q: exit %d, stdout %q, stderr %q; want 2 naming --secret, without the secret", c.provider, c.secret, code, out, errOut)
		}
	}
}

// TestTokenRefusalsSpeakInFlags: the client package refuses a token it would send in clear to a
// non-loopback server in terms of its Go API ("use WithTLS or WithTLSFiles"), and a malformed
// token without saying where it came from; the CLI names its own flags and the token's source,
// never the token. A token file saved by a Windows editor (a byte order mark, CRLF) holds the
// token, as for a secret.
func TestTokenRefusalsSpeakInFlags(t *testing.T) {
	t.Setenv(tokenEnv, "hvt_secretvalue")
	code, _, errOut := run(t, "", "endpoint", "list", "--server", "10.1.2.3:7700")
	if code != 1 || !strings.Contains(errOut, "--ca") || strings.Contains(errOut, "WithTLS") || !strings.Contains(errOut, "$"+tokenEnv) || strings.Contains(errOut, "secretvalue") {
		t.Errorf("token in clear to a remote server: exit %d, stderr %q; want 1, naming --ca and $%s, not the Go API or the token", code, errOut, tokenEnv)
	}
	t.Setenv(tokenEnv, "hvt_secret value")
	code, _, errOut = run(t, "", "endpoint", "list", "--server", "127.0.0.1:1")
	if code != 1 || !strings.Contains(errOut, "$"+tokenEnv) || strings.Contains(errOut, "secret value") {
		t.Errorf("malformed token: exit %d, stderr %q; want 1 naming $%s, not the token", code, errOut, tokenEnv)
	}

	t.Setenv(tokenEnv, "")
	bootstrapToken := "bootstrap-" + strings.Repeat("w", 40)
	addr := startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: bootstrapToken})
	tokenFile := filepath.Join(t.TempDir(), "token.txt")
	if err := os.WriteFile(tokenFile, []byte("\ufeff"+bootstrapToken+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "", "endpoint", "list", "--server", addr, "--token-file", tokenFile); code != 0 {
		t.Errorf("token file with a byte order mark: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestPermissionDeniedNamesTheScopeNeeded: the server answers every scope refusal with "the
// caller's scopes do not allow this call"; the CLI says which scope the command needs, and
// for a scoped inbox caller leasing without --endpoint (which needs inbox:*), to name it.
func TestPermissionDeniedNamesTheScopeNeeded(t *testing.T) {
	bootstrapToken := "bootstrap-" + strings.Repeat("p", 40)
	addr := startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: bootstrapToken})
	t.Setenv(tokenEnv, bootstrapToken)
	token := func(scope string) string {
		t.Helper()
		code, out, errOut := run(t, "", "token", "create", "--name", scope, "--scope", scope, "--server", addr)
		if code != 0 {
			t.Fatalf("token create: %d %s", code, errOut)
		}
		var resp struct{ BearerToken string }
		if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.BearerToken == "" {
			t.Fatalf("token create printed %q: %v", out, err)
		}
		return resp.BearerToken
	}
	verifyToken, inboxToken := token("verify:*"), token("inbox:acme-*")
	for _, c := range []struct {
		token string
		args  []string
		want  string
	}{
		{verifyToken, []string{"endpoint", "list"}, "admin"},
		{inboxToken, []string{"inbox", "lease"}, "--endpoint"},
		{inboxToken, []string{"inbox", "lease", "--endpoint", "other"}, "inbox:other"},
	} {
		t.Setenv(tokenEnv, c.token)
		code, _, errOut := run(t, "", append(c.args, "--server", addr)...)
		if code != 1 || !strings.Contains(errOut, "PermissionDenied") || !strings.Contains(errOut, "hint:") || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1, PermissionDenied and a hint naming %s", c.args, code, errOut, c.want)
		}
	}
}

// TestServeNamesTheFlagOfAnUnreadableMasterKey: a --master-key-file that cannot be read, or a
// --data-dir where the generated key cannot be kept, stops serve naming the flag to fix, as
// --old-master-key-file's errors do, rather than only secretbox's "reading master key file".
func TestServeNamesTheFlagOfAnUnreadableMasterKey(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--master-key-file", filepath.Join(dir, "missing.key"), "--data-dir", dir}, "--master-key-file"},
		{[]string{"--data-dir", filepath.Join(notADir, "data")}, "--data-dir"},
	} {
		code, _, errOut := run(t, "", append([]string{"serve", "--listen", "127.0.0.1:0"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("serve %q: exit %d, stderr %q; want 1 naming %s", c.args, code, errOut, c.want)
		}
	}
}

// TestServerAddressMistakes: --server given as a URL (http://host:port, as for the edge's
// webhook URLs, its scheme in any case) is a value of the wrong form, refused before any call
// (exit 2) rather than failing as gRPC's "invalid target address" or a DNS lookup of the whole
// URL. The address of an HTTP/1.1 listener (serve's --http-listen) is not blamed on TLS, and an
// address without a port says that gRPC dialed 443.
func TestServerAddressMistakes(t *testing.T) {
	for _, server := range []string{"http://127.0.0.1:7700", "https://hookverify.example.com", "HTTP://127.0.0.1:7700"} {
		code, out, errOut := run(t, "", "endpoint", "list", "--server", server)
		if code != 2 || out != "" || !strings.Contains(errOut, "--server") || !strings.Contains(errOut, "host:port") {
			t.Errorf("--server %s: exit %d, stdout %q, stderr %q; want 2 naming --server and host:port", server, code, out, errOut)
		}
	}

	h1 := httptest.NewServer(http.NotFoundHandler())
	defer h1.Close()
	addr := strings.TrimPrefix(h1.URL, "http://")
	code, _, errOut := run(t, "", "endpoint", "list", "--server", addr, "--timeout", "5s")
	if code != 1 || !strings.Contains(errOut, "Unavailable") || !strings.Contains(errOut, "--http-listen") || strings.Contains(errOut, "TLS server") {
		t.Errorf("--server of an HTTP/1.1 listener: exit %d, stderr %q; want 1 and a hint naming --http-listen, not TLS", code, errOut)
	}

	code, _, errOut = run(t, "", "endpoint", "list", "--server", "127.0.0.1", "--timeout", "5s")
	if code != 1 || !strings.Contains(errOut, "443") || !strings.Contains(errOut, "host:port") {
		t.Errorf("--server without a port: exit %d, stderr %q; want 1 and a hint that gRPC dialed 443", code, errOut)
	}
}

// TestInboxStatsRefusalNamesTheScopeItNeeds: inbox stats names no delivery; the server answers
// it to a caller with any inbox scope (each endpoint it covers), and refuses one with none. Its
// hint spoke of "the endpoint of every delivery named" and of inbox ids that do not exist, as
// for ack or requeue, which sends an operator whose token has only verify scopes looking for a
// delivery id.
func TestInboxStatsRefusalNamesTheScopeItNeeds(t *testing.T) {
	addr, _, created := serverWithToken(t, "v", "verify:*")
	t.Setenv(tokenEnv, created.BearerToken)
	code, _, errOut := run(t, "", "inbox", "stats", "--server", addr)
	_, hint, _ := strings.Cut(errOut, "hint: ")
	if code != 1 || !strings.Contains(errOut, "PermissionDenied") || !strings.Contains(hint, "inbox:") || strings.Contains(hint, "delivery named") {
		t.Errorf("inbox stats with a verify token: exit %d, stderr %q; want 1, PermissionDenied and a hint naming an inbox scope, not deliveries", code, errOut)
	}
}
