package server_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestCertNeedsOneChainBothValidAndTrusted: a client certificate may verify through several
// chains (a cross-signed intermediate: one issued by the old root, one by the new). The
// per-call checks must find one chain that is within its validity period AND anchored by a
// CA still trusted; a connection whose only valid chain runs to a CA taken out of the client
// CAs, and whose only trusted chain has expired, has no chain left and must be refused.
func TestCertNeedsOneChainBothValidAndTrusted(t *testing.T) {
	t.Parallel()
	now := time.Now()
	oldRoot, newRoot := newTestCA(t, "old root"), newTestCA(t, "new root")
	// One intermediate key and subject, certified by both roots: by the old one for long,
	// by the new one for an hour only.
	inter := oldRoot.intermediate(t, "acme intermediate", now.Add(-time.Hour), now.Add(20*time.Hour))
	cross := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "acme intermediate"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	crossRaw, err := x509.CreateCertificate(rand.Reader, cross, newRoot.cert, inter.cert.PublicKey, newRoot.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := inter.issue(t, edgeSubject, now.Add(-time.Hour), now.Add(10*time.Hour), false)
	leaf.Certificate = append(leaf.Certificate, crossRaw)

	var oldRootRemoved atomic.Bool
	clk := &clock{now: now.UTC().Truncate(time.Second)}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, kr := mustKeyring(t)
	srv, err := server.New(server.Options{Keyring: kr, Protocols: protocol.Default(), Now: clk.Now,
		Logger: slog.New(slog.NewJSONHandler(&syncbuf.Buffer{}, nil)),
		Auth: &server.AuthConfig{
			CertScopes: map[string][]server.Scope{edgeSubject.String(): {{Kind: server.ScopeVerify, Endpoints: "acme-*"}}},
			TrustsClientCA: func(anchor *x509.Certificate) bool {
				return anchor.Equal(newRoot.cert) || anchor.Equal(oldRoot.cert) && !oldRootRemoved.Load()
			},
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(st)
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(oldRoot.cert)
	clientCAs.AddCert(newRoot.cert)
	serverCert := oldRoot.issue(t, pkix.Name{CommonName: "hookverify"}, now.Add(-time.Hour), now.Add(time.Hour), true)
	g := srv.NewGRPCServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientCAs: clientCAs, ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12})))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: oldRoot.pool(), Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := hookverifyv1.NewVerifierServiceClient(conn)

	_, err = client.Verify(t.Context(), verifyReq("acme-orders"))
	allowed(t, "Verify with both chains valid and trusted", err)

	// Either change alone leaves a good chain.
	oldRootRemoved.Store(true)
	_, err = client.Verify(t.Context(), verifyReq("acme-orders"))
	allowed(t, "Verify with the old root removed (the new root's chain is valid)", err)
	oldRootRemoved.Store(false)
	clk.Advance(2 * time.Hour)
	_, err = client.Verify(t.Context(), verifyReq("acme-orders"))
	allowed(t, "Verify with the cross certificate expired (the old root's chain is valid and trusted)", err)

	// Both: the valid chain is untrusted, the trusted one expired.
	oldRootRemoved.Store(true)
	_, err = client.Verify(t.Context(), verifyReq("acme-orders"))
	refusedWith(t, "Verify with no chain both valid and trusted", err, codes.Unauthenticated)
}
