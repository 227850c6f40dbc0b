package cli

import (
	"crypto/tls"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server"
)

// TestCertScopesSubjectOnSeveralLinesGetsEveryLinesScopes: a --cert-scopes file naming one
// subject on two lines gives that subject the scopes of both, rather than only the last line's.
func TestCertScopesSubjectOnSeveralLinesGetsEveryLinesScopes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scopes")
	if err := os.WriteFile(path, []byte("verify:acme-* CN=edge-1\ninbox:acme CN=edge-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := readCertScopes(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := server.ParseScopes([]string{"verify:acme-*", "inbox:acme"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m["CN=edge-1"]; !slices.Equal(got, want) {
		t.Errorf("CN=edge-1 got scopes %v, want %v (both lines')", got, want)
	}
}

// TestClientCAFileSkipsBlocksThatAreNotCertificates: a --client-ca bundle holding other PEM
// blocks besides its certificates (a private key, a CRL) loads, trusting its certificates, as
// x509.CertPool.AppendCertsFromPEM would; such a block is not refused as a bad certificate.
func TestClientCAFileSkipsBlocksThatAreNotCertificates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ca.pem")
	testpki.NewCA(t, "bundle CA").WriteCA(t, path)
	caPEM, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte("not a certificate")})
	_, anchors, err := parseClientCAs(append(other, caPEM...))
	if err != nil {
		t.Fatalf("a CA bundle with a CRL block: %v", err)
	}
	if len(anchors) != 1 {
		t.Errorf("%d trust anchors, want the 1 certificate", len(anchors))
	}
}

// TestServeRefusesTLSBelow12: serve's TLS listener does not negotiate TLS 1.0 or 1.1 with a
// client offering nothing newer.
func TestServeRefusesTLSBelow12(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "server CA")
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "server", ca.Issue(t, testpki.Leaf{Server: true}))
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	a := authFlags{tlsCert: certFile, tlsKey: keyFile}
	cfg, err := a.serverTLSConfig([][]byte{certPEM, keyPEM, nil})
	if err != nil {
		t.Fatal(err)
	}
	serverEnd, clientEnd := net.Pipe()
	defer serverEnd.Close()
	defer clientEnd.Close()
	done := make(chan error, 1)
	go func() {
		err := tls.Server(serverEnd, cfg).Handshake()
		serverEnd.Close()
		done <- err
	}()
	c := tls.Client(clientEnd, &tls.Config{
		ServerName: "localhost", RootCAs: ca.Pool(),
		MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11,
	})
	clientErr := c.Handshake()
	clientEnd.Close()
	if serverErr := <-done; serverErr == nil || clientErr == nil {
		t.Errorf("a TLS 1.1 handshake succeeded (server %v, client %v); want it refused", serverErr, clientErr)
	}
}

// TestCertScopesRefuseATabAfterAComma: a subject written with a tab after a comma, which Go
// never prints and so no certificate matches, is refused as one with a space is.
func TestCertScopesRefuseATabAfterAComma(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scopes")
	if err := os.WriteFile(path, []byte("admin CN=edge-1,\tO=Acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readCertScopes(path); err == nil {
		t.Error("a subject with a tab after a comma was accepted")
	}
}
