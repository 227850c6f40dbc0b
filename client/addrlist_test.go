package client_test

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// healthServer serves f with a gRPC health service on host, port 0, until the test ends or
// stop is called.
func healthServer(t *testing.T, f *fakeServer, host string, status healthpb.HealthCheckResponse_ServingStatus, opts ...grpc.ServerOption) (addr string, stop func()) {
	t.Helper()
	g := grpc.NewServer(opts...)
	hookverifyv1.RegisterVerifierServiceServer(g, f)
	h := health.NewServer()
	h.SetServingStatus("", status)
	healthpb.RegisterHealthServer(g, h)
	lis, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String(), g.Stop
}

// TestDialAddressList: the Node edge (grpc-js) takes "ipv4:a,b" targets, which grpc-go has no
// resolver for: Dial accepted one, gRPC took the whole list for a DNS name, and every call
// failed with UNAVAILABLE. Dial now resolves ipv4: and ipv6: lists itself, balanced round robin
// over the SERVING instances like a DNS name of several addresses.
func TestDialAddressList(t *testing.T) {
	t.Parallel()
	a, b, down := newFakeServer(), newFakeServer(), newFakeServer()
	addrA, _ := healthServer(t, a, "127.0.0.1", healthpb.HealthCheckResponse_SERVING)
	addrB, stopB := healthServer(t, b, "127.0.0.1", healthpb.HealthCheckResponse_SERVING)
	addrDown, _ := healthServer(t, down, "127.0.0.1", healthpb.HealthCheckResponse_NOT_SERVING)
	conn := dial(t, "ipv4:"+addrA+","+addrDown+","+addrB, client.WithRetry(fastRetry))
	call := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
			t.Fatalf("Verify through an ipv4: list: %v", err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); (a.count("Verify") < 5 || b.count("Verify") < 5) && time.Now().Before(deadline); {
		call()
	}
	if a.count("Verify") < 5 || b.count("Verify") < 5 {
		t.Errorf("calls not balanced: %d and %d", a.count("Verify"), b.count("Verify"))
	}
	if n := down.count("Verify"); n != 0 {
		t.Errorf("the NOT_SERVING instance got %d calls", n)
	}

	// An instance that stops gets no more calls; the others take them all.
	stopB()
	before := a.count("Verify")
	for range 20 {
		call()
	}
	if got := a.count("Verify") - before; got != 20 {
		t.Errorf("after one instance stopped, the other got %d of 20 calls", got)
	}
	if n := down.count("Verify"); n != 0 {
		t.Errorf("the NOT_SERVING instance got %d calls", n)
	}

	// ipv6: the same, with brackets around an address that has a port.
	v6 := newFakeServer()
	addr6, _ := healthServer(t, v6, "::1", healthpb.HealthCheckResponse_SERVING)
	conn6 := dial(t, "ipv6:///"+addr6, client.WithRetry(fastRetry))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn6.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil || v6.count("Verify") != 1 {
		t.Fatalf("Verify through an ipv6: list: %v, %d calls", err, v6.count("Verify"))
	}
}

// TestDialRefusesBadAddressLists: a list gRPC could never connect to is refused by Dial (and
// CheckTarget), with a message that names the problem, instead of a connection whose every
// call fails; an ipv4: list holds unbracketed IPv4 addresses only (gRPC C-core and grpc-js
// refuse the rest too). Zones that name interfaces, such as br_lan or eth0.10, are taken.
func TestDialRefusesBadAddressLists(t *testing.T) {
	t.Parallel()
	for _, target := range []string{
		"ipv4:",
		"ipv4:///",
		"ipv4:127.0.0.1:7443,",
		"ipv4:,127.0.0.1:7443",
		"ipv4:127.0.0.1:7443,,127.0.0.1:7444",
		"ipv4:localhost:7443",
		"ipv4:verifier.internal",
		"ipv4:127.0.0.1:",
		"ipv4:127.0.0.1:0",
		"ipv4:127.0.0.1:65536",
		"ipv4:127.0.0.1:x",
		"ipv4:127.0.0.1:+80",
		"ipv4:127.0.0.256",
		"ipv4:127.1",
		"ipv4:010.0.0.1",
		"ipv4:::1",
		"ipv4:[127.0.0.1]:80",
		"ipv4:[127.0.0.1]",                // brackets without a port either
		"ipv4:127.0.0.1:7443,[127.0.0.2]", // in any entry
		"ipv4:[::1]:7443",                 // the other family, with a port
		"ipv4:[::ffff:127.0.0.1]:7443",
		"ipv4: 127.0.0.1",
		"ipv4://host/127.0.0.1",
		"ipv4:127.0.0.1:80?x=1",
		"IPv4:127.0.0.1:80/",
		"ipv6:",
		"ipv6:127.0.0.1",
		"ipv6:::1:80,",
		"ipv6:[::1",
		"ipv6:::1]:80",
		"ipv6:[::1]:",
		"ipv6:[::1]80",
		"ipv6:[[::1]]:80",
		"ipv6:[::1]:0",
		"ipv6:[fe80::1%]:80",
		"ipv6:[fe80::1%eth0]:80",      // the zone's % unescaped: not a URI
		"ipv6:[fe80::1%25a]b]:80",     // a bracket inside the zone
		"ipv6:[fe80::1%25a%2Cb]:80",   // a comma inside the zone
		"ipv6:[fe80::1%25eth%200]:80", // a space inside the zone
		"ipv6:localhost",
	} {
		if err := client.CheckTarget(target); err == nil {
			t.Errorf("CheckTarget(%q) accepted", target)
		}
		conn, err := client.Dial(target)
		if err == nil {
			conn.Close()
			t.Errorf("Dial(%q) accepted", target)
			continue
		}
		if scheme := strings.ToLower(target[:4]); !strings.Contains(err.Error(), scheme) {
			t.Errorf("Dial(%q): %v; want an error about the %s list", target, err, scheme)
		}
	}
	for _, target := range []string{
		"ipv4:127.0.0.1",
		"ipv4:127.0.0.1:7443,127.0.0.2:7444",
		"ipv4:///127.0.0.1:7443,10.0.0.1",
		"IPV4:127.0.0.1:7443",
		"ipv6:::1",
		"ipv6:[::1]",
		"ipv6:[::1]:7443,[2001:db8::1]:7444,2001:db8::2",
		"ipv6:[fe80::1%25eth0]:7443",
		"ipv6:[fe80::1%25br_lan]:7443", // zones of letters, digits, '.', '-' and '_'
		"ipv6:[fe80::1%25eth0.10]:7443",
		"ipv6:[fe80::1%25wg-0]:7443",
		"ipv6:[::ffff:127.0.0.1]:7443",
	} {
		conn, err := client.Dial(target)
		if err != nil {
			t.Errorf("Dial(%q): %v", target, err)
			continue
		}
		conn.Close()
	}
}

// TestAddressListToken: the API token goes in clear only to loopback, so to a list whose
// addresses are all loopback; a list was taken for a host name and refused even then.
func TestAddressListToken(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"ipv4:127.0.0.1:7443,127.0.0.2:7444", "ipv6:[::1]:7443", "ipv4:///127.0.0.1"} {
		conn, err := client.Dial(target, client.WithToken("hv_tok_123"))
		if err != nil {
			t.Errorf("Dial(%q) with a token: %v", target, err)
			continue
		}
		conn.Close()
	}
	for _, target := range []string{"ipv4:127.0.0.1:7443,192.0.2.1:7443", "ipv6:[::1]:7443,[2001:db8::1]:7443", "ipv4:192.0.2.1"} {
		if conn, err := client.Dial(target, client.WithToken("hv_tok_123")); err == nil || !strings.Contains(err.Error(), "TLS") {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("Dial(%q) with a token and no TLS: %v", target, err)
		}
	}
}

// TestAddressListTLS: over TLS each address of a list is verified as itself, as if dialed
// alone (an instance's certificate names its own IP address); a server name set in WithTLS
// still wins, for certificates that name the service rather than the addresses.
func TestAddressListTLS(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "hookverify test CA")
	roots := ca.Pool()
	var targets []string
	var servers []*fakeServer
	var sni []string // guarded by mu
	var mu sync.Mutex
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		f := newFakeServer()
		f.respond = func(ctx context.Context, _ *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
			if p, ok := peer.FromContext(ctx); ok {
				if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
					mu.Lock()
					sni = append(sni, info.State.ServerName)
					mu.Unlock()
				}
			}
			return &hookverifyv1.VerifyResponse{}, nil
		}
		addr, _ := healthServer(t, f, ip, healthpb.HealthCheckResponse_SERVING,
			grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Leaf{Server: true, IPs: []net.IP{net.ParseIP(ip)}, DNSNames: []string{"verifier.internal"}})}, MinVersion: tls.VersionTLS12})))
		targets = append(targets, addr)
		servers = append(servers, f)
	}
	for name, cfg := range map[string]*tls.Config{
		"addresses":   {RootCAs: roots, MinVersion: tls.VersionTLS12},
		"server name": {RootCAs: roots, ServerName: "verifier.internal", MinVersion: tls.VersionTLS12},
	} {
		mu.Lock()
		sni = nil
		mu.Unlock()
		conn := dial(t, "ipv4:"+strings.Join(targets, ","), client.WithTLS(cfg), client.WithToken("hv_tok"), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
		before := []int{servers[0].count("Verify"), servers[1].count("Verify")}
		for deadline := time.Now().Add(5 * time.Second); servers[0].count("Verify") == before[0] || servers[1].count("Verify") == before[1]; {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"})
			cancel()
			if err != nil {
				t.Fatalf("%s: Verify over TLS through an ipv4: list: %v", name, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: calls reached %d and %d, want both", name, servers[0].count("Verify")-before[0], servers[1].count("Verify")-before[1])
			}
		}
		// A client sends no SNI for an IP address, and the server name when it has one.
		mu.Lock()
		for _, got := range sni {
			if want := cfg.ServerName; got != want {
				t.Errorf("%s: the server saw the name %q, want %q", name, got, want)
			}
		}
		mu.Unlock()
	}
}
