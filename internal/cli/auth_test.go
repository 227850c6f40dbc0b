package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage/sqlite"
)

func TestServeAuthRules(t *testing.T) {
	cases := []struct {
		name    string
		flags   authFlags
		listen  string
		wantErr string
		warns   bool
	}{
		{name: "loopback without auth is the default", listen: "127.0.0.1:7700"},
		{name: "non-loopback without auth", listen: "0.0.0.0:7700", wantErr: "not a loopback address"},
		{name: "non-loopback with tokens but no TLS warns", flags: authFlags{requireAuth: true}, listen: "0.0.0.0:7700", warns: true},
		{name: "non-loopback with tokens and TLS", flags: authFlags{requireAuth: true, tlsCert: "c", tlsKey: "k"}, listen: "[::]:7700"},
		{name: "non-loopback with mTLS", flags: authFlags{tlsCert: "c", tlsKey: "k", clientCA: "ca"}, listen: ":7700"},
		{name: "client CA without TLS", flags: authFlags{clientCA: "ca"}, listen: "127.0.0.1:7700", wantErr: "--client-ca needs --tls-cert"},
		{name: "certificate without key", flags: authFlags{tlsCert: "c"}, listen: "127.0.0.1:7700", wantErr: "go together"},
		{name: "cert scopes without client CA", flags: authFlags{requireAuth: true, certScopes: "f"}, listen: "127.0.0.1:7700", wantErr: "--cert-scopes needs --client-ca"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			err := c.flags.check(slog.New(slog.NewTextHandler(&logs, nil)), c.listen)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("check = %v, want error containing %q", err, c.wantErr)
			}
			if warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "WITHOUT TLS"); warned != c.warns {
				t.Errorf("warned %v, want %v; log: %s", warned, c.warns, logs.String())
			}
		})
	}
}

// TestTokenCommandsAgainstAnAuthenticatedServer runs the token life cycle through the CLI: the
// bootstrap admin token from the environment creates a scoped token, which is shown once,
// works within its scope only, and stops working once revoked.
func TestTokenCommandsAgainstAnAuthenticatedServer(t *testing.T) {
	bootstrapToken := "bootstrap-" + strings.Repeat("b", 40)
	addr := startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: bootstrapToken})
	dir := t.TempDir()
	writeToken := func(name, token string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return run(t, "", append(args, "--server", addr)...)
	}

	if code, _, errOut := cli("endpoint", "list"); code != 1 || !strings.Contains(errOut, "Unauthenticated") {
		t.Fatalf("endpoint list without a token: exit %d, %q", code, errOut)
	}
	t.Setenv(tokenEnv, bootstrapToken)
	if code, _, errOut := cli("endpoint", "create", "--id", "acme-orders", "--provider", "github"); code != 0 {
		t.Fatalf("endpoint create with the bootstrap token: exit %d, %q", code, errOut)
	}
	code, out, errOut := cli("token", "create", "--name", "acme edge", "--scope", "verify:acme-*")
	if code != 0 {
		t.Fatalf("token create: exit %d, %q", code, errOut)
	}
	var created struct {
		Token       struct{ ID string }
		BearerToken string
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.BearerToken == "" || created.Token.ID == "" {
		t.Fatalf("token create printed %q (%v)", out, err)
	}
	if code, _, errOut := cli("token", "create", "--name", "x", "--scope", "root"); code != 1 || !strings.Contains(errOut, "InvalidArgument") {
		t.Errorf("token create with a bad scope: exit %d, %q", code, errOut)
	}

	edgeFile := writeToken("edge", created.BearerToken)
	if code, _, errOut := cli("endpoint", "list", "--token-file", edgeFile); code != 1 || !strings.Contains(errOut, "PermissionDenied") {
		t.Errorf("endpoint list with a verify token: exit %d, %q", code, errOut)
	}
	if code, _, errOut := cli("token", "list", "--token-file", edgeFile); code != 1 || !strings.Contains(errOut, "PermissionDenied") {
		t.Errorf("token list with a verify token: exit %d, %q", code, errOut)
	}
	code, out, errOut = cli("token", "list")
	if code != 0 || !strings.Contains(out, created.Token.ID) || !strings.Contains(out, `"bootstrap"`) || strings.Contains(out, created.BearerToken) {
		t.Errorf("token list: exit %d, %q, stdout:\n%s", code, errOut, out)
	}
	if code, out, errOut := cli("token", "revoke", "--id", created.Token.ID); code != 0 || !strings.Contains(out, "revokedAt") {
		t.Fatalf("token revoke: exit %d, %q, %s", code, errOut, out)
	}
	if code, _, errOut := cli("endpoint", "list", "--token-file", edgeFile); code != 1 || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("endpoint list with a revoked token: exit %d, %q", code, errOut)
	}
}

// TestClientCertificateCommands serves mutual TLS with a subject-to-scopes file and calls it
// through the CLI's --ca, --cert and --key.
func TestClientCertificateCommands(t *testing.T) {
	dir := t.TempDir()
	addr := startMutualTLSServer(t, dir, "# operators\nadmin CN=ops,O=Acme\nverify:acme-*,inbox:acme-* CN=edge\n",
		pkix.Name{CommonName: "ops", Organization: []string{"Acme"}}, pkix.Name{CommonName: "edge"})
	as := func(who string, args ...string) (int, string, string) {
		t.Helper()
		return run(t, "", append(args, "--server", addr, "--ca", filepath.Join(dir, "ca.pem"),
			"--cert", filepath.Join(dir, who+".pem"), "--key", filepath.Join(dir, who+".key"))...)
	}
	if code, _, errOut := as("ops", "endpoint", "create", "--id", "acme-orders", "--provider", "github"); code != 0 {
		t.Fatalf("endpoint create as ops: exit %d, %q", code, errOut)
	}
	if code, _, errOut := as("edge", "endpoint", "list"); code != 1 || !strings.Contains(errOut, "PermissionDenied") {
		t.Errorf("endpoint list as edge: exit %d, %q", code, errOut)
	}
	if code, _, errOut := as("edge", "inbox", "lease", "--endpoint", "acme-orders"); code != 0 {
		t.Errorf("inbox lease as edge: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, "", "endpoint", "list", "--server", addr, "--ca", filepath.Join(dir, "ca.pem")); code != 1 || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("endpoint list over TLS without a certificate: exit %d, %q", code, errOut)
	}
}

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
		addr := startMutualTLSServer(t, dir, "admin CN=ops\n", pkix.Name{CommonName: "ops"})
		code, out, errOut := run(t, "", "rekey", "--server", addr, "--ca", filepath.Join(dir, "ca.pem"),
			"--cert", filepath.Join(dir, "ops.pem"), "--key", filepath.Join(dir, "ops.key"), "--timeout", "5s")
		if code != 0 {
			t.Fatalf("rekey over mutual TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
}

// startMutualTLSServer writes a CA, a server certificate and one client certificate for each
// of clients (in dir, as <CommonName>.pem and .key) and serves mutual TLS on loopback with
// scopes as the --cert-scopes file.
func startMutualTLSServer(t *testing.T, dir, scopes string, clients ...pkix.Name) string {
	t.Helper()
	ca := testpki.NewCA(t, "test CA")
	ca.WriteCA(t, filepath.Join(dir, "ca.pem"))
	testpki.WriteKeyPair(t, dir, "server", ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "hookverify"}, Server: true}))
	for _, subject := range clients {
		testpki.WriteKeyPair(t, dir, subject.CommonName, ca.Issue(t, testpki.Leaf{Subject: subject}))
	}
	scopesFile := filepath.Join(dir, "cert-scopes")
	if err := os.WriteFile(scopesFile, []byte(scopes), 0o600); err != nil {
		t.Fatal(err)
	}
	return startAuthServer(t, serveConfig{auth: authFlags{
		tlsCert: filepath.Join(dir, "server.pem"), tlsKey: filepath.Join(dir, "server.key"),
		clientCA: filepath.Join(dir, "ca.pem"), certScopes: scopesFile,
	}})
}

// startAuthServer runs an embedded server with sc's authentication settings on loopback.
func startAuthServer(t *testing.T, sc serveConfig) string {
	t.Helper()
	keyring := testpki.Keyring(t)
	return startAuthServerOn(t, sc, keyring, t.TempDir())
}

// startAuthServerOn is startAuthServer on the embedded store in dataDir, sealed with keyring:
// several instances can share one store.
func startAuthServerOn(t *testing.T, sc serveConfig, keyring *secretbox.Keyring, dataDir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc.listen = "127.0.0.1:0"
	if err := sc.auth.check(newTestLogger(t), sc.listen); err != nil {
		t.Fatal(err)
	}
	cfg := storeConfig{dataDir: dataDir}
	srv, err := startServerWith(ctx, newTestLogger(t), sc, keyring, cfg.openStore)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return srv.addr
}

// TestBenchAgainstAnAuthenticatedServer: bench sends the token of the shared client flags, so
// it can measure a server that requires one.
func TestBenchAgainstAnAuthenticatedServer(t *testing.T) {
	bootstrapToken := "bootstrap-" + strings.Repeat("c", 40)
	addr := startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: bootstrapToken})
	args := []string{"bench", "--server", addr, "--duration", "200ms", "--workers", "2", "--mix", "new=80,dup=20"}
	if code, _, errOut := run(t, "", args...); code != 1 || !strings.Contains(errOut, "Unauthenticated") {
		t.Fatalf("bench without a token: exit %d, %q", code, errOut)
	}
	t.Setenv(tokenEnv, bootstrapToken)
	code, out, errOut := run(t, "", args...)
	if code != 0 || !strings.Contains(out, "accepted") || strings.Contains(out, "error:") {
		t.Fatalf("bench with the admin token: exit %d, %q, stdout:\n%s", code, errOut, out)
	}
}

// TestPrepareTokensWarnsAccuratelyOnceEveryAdminTokenIsRevoked: once an admin token was stored,
// the bootstrap variable creates none (a revoked bootstrap token stays revoked), so the warning
// must not send the operator to it; on a store that never held one, it must.
func TestPrepareTokensWarnsAccuratelyOnceEveryAdminTokenIsRevoked(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sc := serveConfig{auth: authFlags{requireAuth: true}}
	warnings := func() string {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := prepareTokens(ctx, log, st, sc); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if got := warnings(); !strings.Contains(got, "set $"+bootstrapTokenEnv) {
		t.Fatalf("fresh store: warning %q, want it to name $%s", got, bootstrapTokenEnv)
	}
	if _, err := server.EnsureBootstrapToken(ctx, st, "bootstrap-"+strings.Repeat("w", 40), time.Now); err != nil {
		t.Fatal(err)
	}
	list, err := st.ListTokens(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListTokens = %v, %v", list, err)
	}
	if _, err := st.RevokeToken(ctx, list[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	got := warnings()
	if strings.Contains(got, "set $"+bootstrapTokenEnv) || !strings.Contains(got, "every admin token is revoked") {
		t.Fatalf("every admin token revoked: warning %q, want one that does not send the operator to $%s", got, bootstrapTokenEnv)
	}
}

// FuzzReadCertScopes: the --cert-scopes file decides which client certificates may do what.
// Any content either is refused or maps non-empty subjects, as written and without surrounding
// space, to scopes that print back to text ParseScope reads again to the same scope.
func FuzzReadCertScopes(f *testing.F) {
	f.Add("# edges\nverify:shop-* CN=edge-1,O=Acme\n\nadmin CN=ops\n")
	f.Add("verify:a,inbox:b   CN=x, O=y \r\n")
	f.Add("admin\nverify:* \t\n")
	f.Add("verify:a CN=dup\nadmin CN=dup\n")
	f.Add(strings.Repeat("a", 70000))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(dir, "scopes")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := readCertScopes(path)
		if err != nil {
			return
		}
		for subject, scopes := range m {
			// Trailing white space other than an unescaped space may be the subject's own (Go
			// does not escape a tab or a no-break space ending a value).
			if subject == "" || subject != strings.TrimLeftFunc(subject, unicode.IsSpace) || strings.ContainsAny(subject, "\n") ||
				strings.HasSuffix(subject, "\r") || strings.HasSuffix(subject, " ") && !strings.HasSuffix(subject, "\\ ") {
				t.Fatalf("subject %q", subject)
			}
			for _, s := range scopes {
				again, err := server.ParseScope(s.String())
				if err != nil || again != s {
					t.Fatalf("scope %v prints as %q, which reads back as %v, %v", s, s.String(), again, err)
				}
			}
		}
	})
}

// TestCertScopesRefuseSpacedSubjects: Go prints a subject "CN=x,O=y", so a line written the
// way OpenSSL prints it, "CN=x, O=y", would map a subject no certificate ever has: refused at
// start, with the form to use. An escaped comma followed by a space is part of a value.
func TestCertScopesRefuseSpacedSubjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scopes")
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("verify:a CN=edge-1, O=Acme\n")
	if _, err := readCertScopes(path); err == nil || !strings.Contains(err.Error(), "space after a comma") {
		t.Fatalf("a spaced subject: %v, want refused", err)
	}
	write("verify:a CN=edge-1,O=Acme\\, Inc.\n")
	m, err := readCertScopes(path)
	if err != nil || len(m[`CN=edge-1,O=Acme\, Inc.`]) != 1 {
		t.Fatalf("an escaped comma and a space in a value: %v, %v; want it mapped", m, err)
	}
}

// TestServeReloadsItsCertificateAndReportsFailedHandshakes: a server certificate renewed on
// disk is presented from the next connection on, without a restart; callers whose handshake
// fails (here one speaking plaintext) are logged and counted, since gRPC keeps them silent,
// and the CLI that spoke plaintext is told to try TLS.
func TestServeReloadsItsCertificateAndReportsFailedHandshakes(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	first := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "hookverify"}, Server: true})
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "server", first)
	logs := &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	keyring := testpki.Keyring(t)
	sc := serveConfig{listen: "127.0.0.1:0", httpListen: "127.0.0.1:0", auth: authFlags{tlsCert: certFile, tlsKey: keyFile, requireAuth: true}}
	store := storeConfig{dataDir: t.TempDir()}
	srv, err := startServerWith(ctx, slog.New(slog.NewJSONHandler(logs, nil)), sc, keyring, store.openStore)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	presented := func() *big.Int {
		t.Helper()
		conn, err := tls.Dial("tcp", srv.addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	if got, want := presented(), testpki.Serial(t, first); got.Cmp(want) != 0 {
		t.Fatalf("server presented serial %v, want %v", got, want)
	}
	renewed := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "hookverify"}, Server: true})
	testpki.WriteKeyPair(t, dir, "server", renewed)
	if got, want := presented(), testpki.Serial(t, renewed); got.Cmp(want) != 0 {
		t.Fatalf("after the renewal the server presented serial %v, want the renewed %v", got, want)
	}
	logLine(t, logs, "reloaded the TLS files")

	code, _, errOut := run(t, "", "endpoint", "list", "--server", srv.addr, "--timeout", "5s")
	if code != 1 || !strings.Contains(errOut, "--ca") {
		t.Errorf("plaintext CLI against a TLS server: exit %d, %q; want a hint to give --ca", code, errOut)
	}
	failed := logLine(t, logs, "TLS handshake failed")
	if !strings.Contains(fmt.Sprint(failed["err"]), "does not look like a TLS handshake") || failed["remote"] == "" {
		t.Errorf("handshake failure logged as %v", failed)
	}
	if metrics := get(t, "http://"+srv.httpAddr+"/metrics"); !regexp.MustCompile(`(?m)^hookverify_tls_handshake_failures_total [1-9]`).MatchString(metrics) {
		t.Errorf("/metrics does not count the failed handshake:\n%s", metrics)
	}
}

// TestClientCARemovedStopsOpenConnections: a CA taken out of --client-ca (a compromised one)
// stops authenticating the connections it had verified, within about a second, not only new
// ones; put back, it authenticates them again.
func TestClientCARemovedStopsOpenConnections(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	caFile, clientCAFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client-ca.pem")
	ca.WriteCA(t, caFile)
	ca.WriteCA(t, clientCAFile)
	serverCert, serverKey := testpki.WriteKeyPair(t, dir, "server", ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "hookverify"}, Server: true}))
	opsCert, opsKey := testpki.WriteKeyPair(t, dir, "ops", ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "ops"}}))
	scopes := filepath.Join(dir, "cert-scopes")
	if err := os.WriteFile(scopes, []byte("admin CN=ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startAuthServer(t, serveConfig{auth: authFlags{tlsCert: serverCert, tlsKey: serverKey, clientCA: clientCAFile, certScopes: scopes}})
	_, port, _ := net.SplitHostPort(addr)
	conn, err := client.Dial("localhost:"+port, client.WithTLSFiles(caFile, opsCert, opsKey), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	list := func() error {
		_, err := conn.Admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
		return err
	}
	if err := list(); err != nil {
		t.Fatalf("ListEndpoints as ops: %v", err)
	}
	// The client CA file now holds another CA only.
	testpki.NewCA(t, "another CA").WriteCA(t, clientCAFile)
	time.Sleep(clientCALookInterval + 100*time.Millisecond)
	_ = list() // the call that makes the server look at its files again
	if err := list(); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListEndpoints over a connection verified by a removed CA: %v, want Unauthenticated", err)
	}
	ca.WriteCA(t, clientCAFile)
	time.Sleep(clientCALookInterval + 100*time.Millisecond)
	_ = list()
	if err := list(); err != nil {
		t.Fatalf("ListEndpoints once the CA is back: %v", err)
	}
}

// TestTokenRevokeReadsALeakedTokenFromStandardInput: after a leak the security engineer holds
// the token, not its id. `token revoke --id -` reads the id or the token itself from standard
// input, so that the token need not go on the command line (process listings, shell history),
// and revokes it; nothing printed repeats the token.
func TestTokenRevokeReadsALeakedTokenFromStandardInput(t *testing.T) {
	addr, created := serverWithLeakyToken(t)
	code, out, errOut := run(t, created.BearerToken+"\n", "token", "revoke", "--id", "-", "--server", addr)
	if code != 0 || !strings.Contains(out, created.Token.ID) || !strings.Contains(out, "revokedAt") {
		t.Fatalf("token revoke --id - with the token on stdin: exit %d, %q, %s", code, errOut, out)
	}
	if strings.Contains(out+errOut, created.BearerToken) {
		t.Errorf("token revoke printed the token: %s %s", out, errOut)
	}
	if code, _, errOut := run(t, "", "token", "revoke", "--id", "-", "--server", addr); code != 2 || !strings.Contains(errOut, "standard input") {
		t.Errorf("token revoke --id - with nothing on stdin: exit %d, %q", code, errOut)
	}
}

// TestBootstrapTokenTrimmedAsTheClientTrimsIt: a bootstrap token set from a file keeps the
// file's newline (and a Windows editor's byte order mark); serve stores the token the CLI
// sends, which trims both, rather than refuse it or store one no caller sends.
func TestBootstrapTokenTrimmedAsTheClientTrimsIt(t *testing.T) {
	token := "bootstrap-" + strings.Repeat("n", 40)
	for _, set := range []string{token + "\n", token + "\r\n", "\ufeff" + token + "\n", " " + token} {
		t.Setenv(bootstrapTokenEnv, set)
		t.Setenv(tokenEnv, set)
		sent, err := readToken("")
		if err != nil {
			t.Fatal(err)
		}
		if got := bootstrapTokenFromEnv(); got != token || got != sent {
			t.Errorf("bootstrap token %q from %q; the CLI sends %q", got, set, sent)
		}
		if err := server.CheckBootstrapToken(bootstrapTokenFromEnv()); err != nil {
			t.Errorf("%q refused: %v", set, err)
		}
	}
}

// TestTokenRevokeStandardInputTrimmedAsTokensAre: `token revoke --id -` reads what a token
// file or a pasted scanner report holds. The CLI trims a Windows editor's byte order mark
// from every token and secret it reads (readToken, readSecret); here it was kept, so the
// leaked token matched none ("no token matches") and stayed valid.
func TestTokenRevokeStandardInputTrimmedAsTokensAre(t *testing.T) {
	addr, created := serverWithLeakyToken(t)
	code, out, errOut := run(t, "\ufeff"+created.BearerToken+"\r\n", "token", "revoke", "--id", "-", "--server", addr)
	if code != 0 || !strings.Contains(out, created.Token.ID) || !strings.Contains(out, "revokedAt") {
		t.Fatalf("token revoke --id - with a BOM before the token: exit %d, %q, %s", code, errOut, out)
	}
}

// TestTokenRevokeTheBootstrapTokenByItsValue: the bootstrap token, the operator's own string
// without the hvt_ prefix, is revoked by its value as README promises for a leaked token, and
// never printed back.
func TestTokenRevokeTheBootstrapTokenByItsValue(t *testing.T) {
	addr, bootstrapToken, created := serverWithToken(t, "admin2", "admin")
	t.Setenv(tokenEnv, created.BearerToken)
	code, out, errOut := run(t, bootstrapToken+"\n", "token", "revoke", "--id", "-", "--server", addr)
	if strings.Contains(out+errOut, bootstrapToken) {
		t.Errorf("token revoke printed the bootstrap token")
	}
	if code != 0 || !strings.Contains(out, `"bootstrap"`) || !strings.Contains(out, "revokedAt") {
		t.Fatalf("token revoke --id - with the bootstrap token on stdin: exit %d, %d bytes of output", code, len(out+errOut))
	}
}

// createdToken is what token create printed.
type createdToken struct {
	Token       struct{ ID string }
	BearerToken string
}

// serverWithLeakyToken starts a server requiring authentication, with $HOOKVERIFY_TOKEN set to
// its bootstrap admin token, and creates a token "leaky" scoped verify:acme-*.
func serverWithLeakyToken(t *testing.T) (addr string, created createdToken) {
	t.Helper()
	addr, _, created = serverWithToken(t, "leaky", "verify:acme-*")
	return addr, created
}

// serverWithToken starts a server requiring authentication, with $HOOKVERIFY_TOKEN set to its
// bootstrap admin token (returned), and creates a token of the name and scope.
func serverWithToken(t *testing.T, name, scope string) (addr, bootstrapToken string, created createdToken) {
	t.Helper()
	bootstrapToken = "bootstrap-" + strings.Repeat("b", 40)
	addr = startAuthServer(t, serveConfig{auth: authFlags{requireAuth: true}, bootstrapToken: bootstrapToken})
	t.Setenv(tokenEnv, bootstrapToken)
	code, out, errOut := run(t, "", "token", "create", "--name", name, "--scope", scope, "--server", addr)
	if code != 0 {
		t.Fatalf("token create: exit %d, %q", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.BearerToken == "" {
		t.Fatalf("token create printed %q (%v)", out, err)
	}
	return addr, bootstrapToken, created
}

// TestCertScopesRefuseSubjectsGoNeverPrints: Go writes a certificate subject's attributes in
// one order (CN before O, ...), the values of one type together ("O=a+O=b"), whatever order the
// CA signed them in; a line naming them in another order (O=Acme,CN=edge-1, as some tools
// print subjects) mapped a subject no certificate ever has, in silence. Refused at start, with
// the form a certificate with those attributes takes.
func TestCertScopesRefuseSubjectsGoNeverPrints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scopes")
	for subject, want := range map[string]string{
		"O=Acme,CN=edge-1":      "CN=edge-1,O=Acme",
		"C=DE,O=Acme,CN=edge-1": "CN=edge-1,O=Acme,C=DE",
		"CN=edge-1,O=a,O=b":     "CN=edge-1,O=a+O=b",
		"CN=edge-1+O=Acme":      "CN=edge-1,O=Acme",
	} {
		if err := os.WriteFile(path, []byte("verify:a "+subject+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readCertScopes(path); err == nil || !strings.Contains(err.Error(), strconv.Quote(want)) {
			t.Errorf("subject %s: %v; want refused, naming %s", subject, err, want)
		}
	}
	// What Go prints is taken, escapes and unknown attribute types included.
	for _, subject := range []string{"CN=edge-1,O=Acme", `CN=edge\, one,O=Acme\+Co,C=DE`, "CN=x,O=a+O=b,L=Berlin", "1.2.3.4=#0c0178,CN=x", "SERIALNUMBER=7,CN=x"} {
		if err := os.WriteFile(path, []byte("verify:a "+subject+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readCertScopes(path); err != nil {
			t.Errorf("subject %s as Go prints it: %v", subject, err)
		}
	}
}

// TestGoSubjectFormRoundTrips: every subject Go prints from the attributes it names reads back
// as itself, so that no real certificate's subject is refused.
func TestGoSubjectFormRoundTrips(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 2))
	values := []string{"a", "Acme, Inc.", " lead", "trail ", "#hash", `back\slash`, "plus+sign", `"q"`, "<>;", "ünï", "x=y"}
	pick := func() []string {
		out := make([]string, r.IntN(3))
		for i := range out {
			out[i] = values[r.IntN(len(values))]
		}
		return out
	}
	for range 2000 {
		name := pkix.Name{Country: pick(), Province: pick(), Locality: pick(), StreetAddress: pick(), PostalCode: pick(), Organization: pick(), OrganizationalUnit: pick()}
		if r.IntN(2) == 0 {
			name.CommonName = values[r.IntN(len(values))]
		}
		if r.IntN(3) == 0 {
			name.SerialNumber = values[r.IntN(len(values))]
		}
		s := name.String()
		if s == "" {
			continue
		}
		if got, ok := goSubjectForm(s); !ok || got != s {
			t.Fatalf("goSubjectForm(%q) = %q, %v; want it back", s, got, ok)
		}
	}
}
