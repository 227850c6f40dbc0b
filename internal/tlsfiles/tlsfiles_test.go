package tlsfiles_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/internal/tlsfiles"
)

// keyPairConfig builds a configuration holding the key pair in contents[0] and contents[1].
func keyPairConfig(contents [][]byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(contents[0], contents[1])
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

func servedSerial(t *testing.T, r *tlsfiles.Reloader) *big.Int {
	t.Helper()
	cert, err := r.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return testpki.Serial(t, *cert)
}

// TestReloaderFollowsTheFiles: a renewed certificate is used from the next handshake on; a
// renewal caught half done (the new certificate beside the old key) keeps the last good pair
// in use and is reported once; once the key follows, the new pair is used.
func TestReloaderFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	first := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "first"}, Server: true})
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "server", first)

	var reported []error
	built := 0
	r, err := tlsfiles.NewReloader([]string{certFile, keyFile}, keyPairConfig,
		func(err error) { reported = append(reported, err) }, func(*tls.Config) { built++ })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := servedSerial(t, r), testpki.Serial(t, first); got.Cmp(want) != 0 {
		t.Fatalf("serving serial %v, want the first certificate's %v", got, want)
	}
	if built != 0 || len(reported) != 0 {
		t.Fatalf("nothing changed, yet %d builds and %d errors were reported", built, len(reported))
	}

	// Half a renewal: the new certificate, the old key.
	second := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "second"}, Server: true})
	testpki.WriteCertificate(t, certFile, second)
	for range 3 {
		if got, want := servedSerial(t, r), testpki.Serial(t, first); got.Cmp(want) != 0 {
			t.Fatalf("half a renewal: serving serial %v, want the last good pair's %v", got, want)
		}
	}
	if len(reported) != 1 || r.LastError() == nil {
		t.Fatalf("half a renewal: %d errors reported (want 1, once however many handshakes), last error %v", len(reported), r.LastError())
	}

	// The key follows.
	testpki.WriteKey(t, keyFile, second)
	if got, want := servedSerial(t, r), testpki.Serial(t, second); got.Cmp(want) != 0 {
		t.Fatalf("after the renewal: serving serial %v, want the second certificate's %v", got, want)
	}
	if built != 1 || r.LastError() != nil {
		t.Fatalf("after the renewal: %d builds reported (want 1), last error %v", built, r.LastError())
	}
}

// TestReloaderSeesAChangeOfTheSameSizeAndTime: a certificate swapped for another of the same
// size, with the modification time put back, is still a change.
func TestReloaderSeesAChangeOfTheSameSizeAndTime(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	leaf := testpki.Leaf{Subject: pkix.Name{CommonName: "same"}, Server: true}
	first := ca.Issue(t, leaf)
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "server", first)
	stamp := time.Now().Add(-time.Minute)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	r, err := tlsfiles.NewReloader([]string{certFile, keyFile}, keyPairConfig, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := ca.Issue(t, leaf)
	testpki.WriteKeyPair(t, dir, "server", second)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := servedSerial(t, r), testpki.Serial(t, second); got.Cmp(want) != 0 {
		t.Fatalf("serving serial %v, want the second certificate's %v", got, want)
	}
}

// TestReloaderRefusesBrokenFilesAtStart: a process must not start without working TLS.
func TestReloaderRefusesBrokenFilesAtStart(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	if _, err := tlsfiles.NewReloader([]string{missing, missing}, keyPairConfig, nil, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing files: %v, want a not-exist error", err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsfiles.NewReloader([]string{garbage, garbage}, keyPairConfig, nil, nil); err == nil {
		t.Error("files that do not build were accepted")
	}
}

// TestCredentialsRenewExpiredClientCertificate: over gRPC's TLS credentials, a client whose
// certificate expired fails its handshakes until the renewed one is written, then succeeds
// without being made again; a server's renewed certificate is what new connections see.
func TestCredentialsRenewExpiredClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	caFile := filepath.Join(dir, "ca.pem")
	ca.WriteCA(t, caFile)
	pool := func(pem []byte) (*x509.CertPool, error) {
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(pem) {
			return nil, errors.New("no CA")
		}
		return p, nil
	}

	serverCert := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "server"}, Server: true})
	serverCertFile, serverKeyFile := testpki.WriteKeyPair(t, dir, "server", serverCert)
	serverSide, err := tlsfiles.NewReloader([]string{serverCertFile, serverKeyFile, caFile}, func(c [][]byte) (*tls.Config, error) {
		cfg, err := keyPairConfig(c)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, err = pool(c[2])
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		return cfg, err
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	expired := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	clientCertFile, clientKeyFile := testpki.WriteKeyPair(t, dir, "client", expired)
	clientSide, err := tlsfiles.NewReloader([]string{caFile, clientCertFile, clientKeyFile}, func(c [][]byte) (*tls.Config, error) {
		cfg, err := keyPairConfig(c[1:])
		if err != nil {
			return nil, err
		}
		cfg.RootCAs, err = pool(c[0])
		return cfg, err
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(serverSide.Credentials()))
	healthpb.RegisterHealthServer(g, health.NewServer())
	go g.Serve(lis)
	defer g.Stop()

	// check makes a new connection, as a client does after a failed one, and returns the
	// outcome of one call and the serial number of the server's certificate.
	clientCreds := clientSide.Credentials()
	check := func() (*big.Int, error) {
		t.Helper()
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(clientCreds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var p peer.Peer
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
			return nil, err
		}
		state := p.AuthInfo.(credentials.TLSInfo).State
		return state.PeerCertificates[0].SerialNumber, nil
	}

	if _, err := check(); err == nil {
		t.Fatal("a client with an expired certificate was let in")
	}
	renewed := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}})
	testpki.WriteKeyPair(t, dir, "client", renewed)
	serial, err := check()
	if err != nil {
		t.Fatalf("with the renewed client certificate on disk: %v", err)
	}
	if want := testpki.Serial(t, serverCert); serial.Cmp(want) != 0 {
		t.Fatalf("server presented serial %v, want %v", serial, want)
	}

	renewedServer := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "server"}, Server: true})
	testpki.WriteKeyPair(t, dir, "server", renewedServer)
	if serial, err = check(); err != nil {
		t.Fatalf("after the server's renewal: %v", err)
	}
	if want := testpki.Serial(t, renewedServer); serial.Cmp(want) != 0 {
		t.Fatalf("after the server's renewal, it presented serial %v, want the renewed %v", serial, want)
	}
}

// TestCredentialsSayWhenRenewedFilesDoNotLoad: a client handshake that fails while the files
// on disk do not load says so, since the old certificate still in use is the likely cause.
func TestCredentialsSayWhenRenewedFilesDoNotLoad(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "client", ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}}))
	r, err := tlsfiles.NewReloader([]string{certFile, keyFile}, keyPairConfig, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	testpki.WriteCertificate(t, certFile, ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}}))
	a, b := net.Pipe()
	b.Close() // the handshake fails at once
	_, _, err = r.Credentials().ClientHandshake(context.Background(), "localhost", a)
	if err == nil || !strings.Contains(err.Error(), "do not load") {
		t.Fatalf("handshake error %v, want it to say the changed files do not load", err)
	}
}

// TestClientConnectionEndsWithItsCertificate: a gRPC connection keeps the client certificate
// of its handshake, and hookverify's server refuses every call on it once that certificate
// expires. A renewal written on time must therefore take over by the old certificate's expiry
// on the connection already open, not only on a "next connection" that a healthy connection
// never makes: an edge whose renewed certificate had been on disk for days otherwise failed
// every delivery from the old one's expiry until it was restarted.
func TestClientConnectionEndsWithItsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	caFile := filepath.Join(dir, "ca.pem")
	ca.WriteCA(t, caFile)

	// The server records the serial number of the client certificate behind each call.
	serverCert := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "server"}, Server: true})
	var mu sync.Mutex
	var seen []*big.Int
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		p, _ := peer.FromContext(ctx)
		mu.Lock()
		seen = append(seen, p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].SerialNumber)
		mu.Unlock()
		return handler(ctx, req)
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})), grpc.UnaryInterceptor(record))
	healthpb.RegisterHealthServer(g, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	defer g.Stop()

	// A certificate with a few seconds left (validity has a resolution of one second).
	notAfter := time.Now().Add(3 * time.Second).Truncate(time.Second)
	first := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}, NotAfter: notAfter})
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "client", first)
	r, err := tlsfiles.NewReloader([]string{caFile, certFile, keyFile}, func(c [][]byte) (*tls.Config, error) {
		cfg, err := keyPairConfig(c[1:])
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AppendCertsFromPEM(c[0])
		return cfg, nil
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(r.Credentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call := func() *big.Int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1]
	}
	if got, want := call(), testpki.Serial(t, first); got.Cmp(want) != 0 {
		t.Fatalf("first call made with serial %v, want %v", got, want)
	}

	// Renewed on time, as cert-manager does at two thirds of the lifetime.
	renewed := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}})
	testpki.WriteKeyPair(t, dir, "client", renewed)
	if got, want := call(), testpki.Serial(t, first); got.Cmp(want) != 0 {
		t.Fatalf("before the old certificate's expiry the open connection was dropped: serial %v, want %v", got, want)
	}
	time.Sleep(time.Until(notAfter) + 2*time.Second)
	if got, want := call(), testpki.Serial(t, renewed); got.Cmp(want) != 0 {
		t.Fatalf("after the old certificate's expiry, a call still went out with serial %v, want the renewed %v", got, want)
	}
}
