package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// --- Certificates, made in the test with crypto/x509 ---

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// chain is the DER of this CA and the CAs between it and the root, when it is an
	// intermediate; a client sends it after its leaf.
	chain [][]byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// issue signs a leaf certificate for subject, valid from notBefore to notAfter.
func (ca *testCA) issue(t *testing.T, subject pkix.Name, notBefore, notAfter time.Time, server bool) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     subject,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	return ca.sign(t, tmpl)
}

// issueRawSubject signs a client certificate whose subject is rdns exactly, attribute by
// attribute in its order, as other tools (openssl, other CAs) may write it, valid for an hour
// either side of now.
func (ca *testCA) issueRawSubject(t *testing.T, rdns pkix.RDNSequence) tls.Certificate {
	t.Helper()
	raw, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return ca.sign(t, &x509.Certificate{RawSubject: raw, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// intermediate signs a CA certificate named name under ca, valid from notBefore to notAfter.
func (ca *testCA) intermediate(t *testing.T, name string, notBefore, notAfter time.Time) *testCA {
	t.Helper()
	inter := ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: name}, NotBefore: notBefore, NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	cert, err := x509.ParseCertificate(inter.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: inter.PrivateKey.(*ecdsa.PrivateKey), chain: inter.Certificate}
}

// sign completes tmpl with a random serial number, signs it with a new key, and returns it
// with the CA's chain.
func (ca *testCA) sign(t *testing.T, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber, _ = rand.Int(rand.Reader, big.NewInt(1<<62))
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: append([][]byte{der}, ca.chain...), PrivateKey: key}
}

// --- The authenticated world ---

// Subjects the server maps to scopes.
var (
	edgeSubject     = pkix.Name{CommonName: "edge-acme", Organization: []string{"Acme"}}
	unlistedSubject = pkix.Name{CommonName: "stranger"}
	// adminSubject is mapped to the admin scope: a certificate caller that changes things.
	adminSubject = pkix.Name{CommonName: "ops-admin", Organization: []string{"Acme"}}
)

// Subject attribute types, for subjects written attribute by attribute.
var (
	oidCommonName         = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidSerialNumber       = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidOrganization       = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOrganizationalUnit = asn1.ObjectIdentifier{2, 5, 4, 11}
)

const authCacheTTL = 300 * time.Millisecond

// authEnv is a server with authentication on, over real TLS on loopback, on SQLite.
type authEnv struct {
	store   storage.Store
	clock   *clock
	keyring *secretbox.Keyring
	logs    *syncbuf.Buffer
	metrics *server.Metrics
	ca      *testCA
	addr    string
	// admin is the bootstrap token; tokens maps a test name to a token made through the API.
	admin  string
	tokens map[string]string
	// ids maps a token name to its id.
	ids map[string]string
	// inboxIDs of deliveries made per endpoint.
	inboxIDs map[string]string
}

func newAuthEnv(t *testing.T) *authEnv {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newAuthEnvOn(t, st)
}

// newAuthEnvWithOutage builds the authenticated world on a store that fails while its down
// is set.
func newAuthEnvWithOutage(t *testing.T) (*authEnv, *outageStore) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	outage := newOutageStore(st)
	return newAuthEnvOn(t, outage), outage
}

// newAuthEnvOn builds the authenticated world on st, an empty, migrated store.
func newAuthEnvOn(t *testing.T, st storage.Store) *authEnv {
	t.Helper()
	_, kr := mustKeyring(t)
	e := &authEnv{store: st, clock: &clock{now: time.Now().UTC().Truncate(time.Second)}, keyring: kr, logs: &syncbuf.Buffer{},
		ca: newTestCA(t, "hookverify test CA"), tokens: map[string]string{}, ids: map[string]string{}, inboxIDs: map[string]string{}}
	e.admin = "bootstrap-" + strings.Repeat("x", 40)
	if created, err := server.EnsureBootstrapToken(t.Context(), st, e.admin, e.clock.Now); err != nil || !created {
		t.Fatalf("EnsureBootstrapToken = %v, %v; want true", created, err)
	}
	e.addr = e.startInstance(t, authCacheTTL)

	admin := e.dial(t, nil)
	ctx := withToken(t.Context(), e.admin)
	for _, id := range []string{"acme-orders", "acme-billing", "globex-orders"} {
		if _, err := hookverifyv1.NewAdminServiceClient(admin).CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{
			Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: "github"}}); err != nil {
			t.Fatalf("CreateEndpoint(%s): %v", id, err)
		}
		d := storage.Delivery{InboxID: "inbox-" + id, Scope: id, EventID: "evt-1", EndpointID: id, OperationKey: "op-" + id,
			SecretID: "sec-1", Method: "POST", URL: "https://hooks.example.com/" + id, Body: []byte("{}"), ReceivedAt: e.clock.Now()}
		if _, err := st.Claim(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		e.inboxIDs[id] = d.InboxID
	}
	tokens := hookverifyv1.NewTokenServiceClient(admin)
	for name, scopes := range map[string][]string{
		"verify-acme":        {"verify:acme-*"},
		"verify-acme-orders": {"verify:acme-orders"},
		"verify-all":         {"verify:*"},
		"inbox-acme":         {"inbox:acme-*"},
		"inbox-all":          {"inbox:*"},
		"admin":              {"admin"},
	} {
		resp, err := tokens.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: name, Scopes: scopes})
		if err != nil {
			t.Fatalf("CreateToken(%s): %v", name, err)
		}
		e.tokens[name], e.ids[name] = resp.GetBearerToken(), resp.GetToken().GetId()
	}
	return e
}

// startInstance serves another server on the env's store, with mutual TLS and the server
// options extra, and returns its address.
func (e *authEnv) startInstance(t *testing.T, cacheTTL time.Duration, extra ...grpc.ServerOption) string {
	t.Helper()
	if e.metrics == nil {
		e.metrics = server.NewMetrics()
	}
	srv, err := server.New(server.Options{
		Keyring: e.keyring, Protocols: protocol.Default(), Now: e.clock.Now, Metrics: e.metrics,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Auth: &server.AuthConfig{
			CertScopes: map[string][]server.Scope{
				edgeSubject.String():  {{Kind: server.ScopeVerify, Endpoints: "acme-*"}},
				adminSubject.String(): {{Kind: server.ScopeAdmin}},
			},
			TokenCacheTTL: cacheTTL,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(e.store)
	serverCert := e.ca.issue(t, pkix.Name{CommonName: "hookverify"}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), true)
	creds := credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert},
		ClientCAs:    e.ca.pool(),
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS12,
	})
	g := srv.NewGRPCServer(append([]grpc.ServerOption{grpc.Creds(creds)}, extra...)...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// dial connects to the env's first instance over TLS, presenting cert when it is not nil.
func (e *authEnv) dial(t *testing.T, cert *tls.Certificate, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return e.dialAddr(t, e.addr, cert, opts...)
}

func (e *authEnv) dialAddr(t *testing.T, addr string, cert *tls.Certificate, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cfg := &tls.Config{RootCAs: e.ca.pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// refusedWith fails unless err has the code.
func refusedWith(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: got %v (%v), want %v", what, got, err, want)
	}
}

// allowed fails if err is a refusal: the call got past authorization (it may still fail for
// its own reasons, like a lost lease).
func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if c := status.Code(err); c == codes.Unauthenticated || c == codes.PermissionDenied {
		t.Fatalf("%s: refused with %v (%v), want allowed", what, c, err)
	}
}

// authFailureKey is one series of hookverify_auth_failures_total.
type authFailureKey struct{ code, method string }

// authFailureCounts reads hookverify_auth_failures_total from the registry, by code and method.
func authFailureCounts(t *testing.T, m *server.Metrics) map[authFailureKey]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[authFailureKey]float64{}
	for _, f := range families {
		if f.GetName() != "hookverify_auth_failures_total" {
			continue
		}
		for _, series := range f.GetMetric() {
			var k authFailureKey
			for _, l := range series.GetLabel() {
				switch l.GetName() {
				case "code":
					k.code = l.GetValue()
				case "method":
					k.method = l.GetValue()
				}
			}
			counts[k] += series.GetCounter().GetValue()
		}
	}
	return counts
}

// authFailuresWithCode sums the series of one code ("PermissionDenied", "Unauthenticated").
func authFailuresWithCode(counts map[authFailureKey]float64, code string) float64 {
	var sum float64
	for k, v := range counts {
		if k.code == code {
			sum += v
		}
	}
	return sum
}

// verifyReq is a delivery that fails signature checks: enough to see whether Verify lets
// the caller in.
func verifyReq(endpointID string) *hookverifyv1.VerifyRequest {
	return &hookverifyv1.VerifyRequest{EndpointId: endpointID, Method: "POST", Url: "https://hooks.example.com/x",
		Body: []byte("{}"), Headers: []*hookverifyv1.HeaderField{{Name: "X-Hub-Signature-256", Value: "sha256=00"}}}
}

func TestAuthScopeDecisions(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	// lastMethod is the full method of the last call made on conn, to check the metric's
	// method label. The decisions run one at a time.
	var lastMethod string
	conn := e.dial(t, nil, grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		lastMethod = method
		return invoker(ctx, method, req, reply, cc, opts...)
	}))
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	admin := hookverifyv1.NewAdminServiceClient(conn)
	inbox := hookverifyv1.NewInboxServiceClient(conn)
	tokens := hookverifyv1.NewTokenServiceClient(conn)
	as := func(name string) context.Context { return withToken(t.Context(), e.tokens[name]) }

	type decision struct {
		name  string
		call  func() error
		allow bool
	}
	verify := func(token, endpoint string) func() error {
		return func() error {
			resp, err := verifier.Verify(as(token), verifyReq(endpoint))
			if err == nil && resp.GetVerdict() == hookverifyv1.Verdict_VERDICT_UNSPECIFIED {
				t.Errorf("Verify by %s on %s: empty answer", token, endpoint)
			}
			return err
		}
	}
	lease := func(token string, endpoints ...string) func() error {
		return func() error {
			_, err := inbox.Lease(as(token), &hookverifyv1.LeaseRequest{EndpointIds: endpoints})
			return err
		}
	}
	dead := func(token string, endpoints ...string) func() error {
		return func() error {
			_, err := inbox.ListDeadLetters(as(token), &hookverifyv1.ListDeadLettersRequest{EndpointIds: endpoints})
			return err
		}
	}
	ack := func(token, inboxID string) func() error {
		return func() error {
			_, err := inbox.Ack(as(token), &hookverifyv1.AckRequest{InboxId: inboxID, LeaseToken: "lease_wrong"})
			return err
		}
	}
	ackMany := func(token string, inboxIDs ...string) func() error {
		return func() error {
			req := &hookverifyv1.AckManyRequest{}
			for _, id := range inboxIDs {
				req.Acks = append(req.Acks, &hookverifyv1.AckRequest{InboxId: id, LeaseToken: "lease_wrong"})
			}
			_, err := inbox.AckMany(as(token), req)
			return err
		}
	}
	nack := func(token, inboxID string) func() error {
		return func() error {
			_, err := inbox.Nack(as(token), &hookverifyv1.NackRequest{InboxId: inboxID, LeaseToken: "lease_wrong"})
			return err
		}
	}
	extend := func(token, inboxID string) func() error {
		return func() error {
			_, err := inbox.ExtendLease(as(token), &hookverifyv1.ExtendLeaseRequest{InboxId: inboxID, LeaseToken: "lease_wrong"})
			return err
		}
	}
	requeue := func(token, inboxID string) func() error {
		return func() error {
			_, err := inbox.Requeue(as(token), &hookverifyv1.RequeueRequest{InboxId: inboxID})
			return err
		}
	}
	discard := func(token, inboxID string) func() error {
		return func() error {
			_, err := inbox.Discard(as(token), &hookverifyv1.DiscardRequest{InboxId: inboxID, Reason: "poison"})
			return err
		}
	}
	listEndpoints := func(token string) func() error {
		return func() error {
			_, err := admin.ListEndpoints(as(token), &hookverifyv1.ListEndpointsRequest{})
			return err
		}
	}
	getEndpoint := func(token, id string) func() error {
		return func() error {
			_, err := admin.GetEndpoint(as(token), &hookverifyv1.GetEndpointRequest{Id: id})
			return err
		}
	}
	listTokens := func(token string) func() error {
		return func() error {
			_, err := tokens.ListTokens(as(token), &hookverifyv1.ListTokensRequest{})
			return err
		}
	}

	decisions := []decision{
		// verify on endpoints and prefixes
		{"verify prefix allows an endpoint under it", verify("verify-acme", "acme-orders"), true},
		{"verify prefix allows another endpoint under it", verify("verify-acme", "acme-billing"), true},
		{"verify prefix denies an existing endpoint outside it", verify("verify-acme", "globex-orders"), false},
		{"verify prefix denies a missing endpoint outside it", verify("verify-acme", "globex-missing"), false},
		{"verify prefix allows a missing endpoint under it (answered as any unknown endpoint)", verify("verify-acme", "acme-missing"), true},
		{"verify on one endpoint allows it", verify("verify-acme-orders", "acme-orders"), true},
		{"verify on one endpoint denies its sibling", verify("verify-acme-orders", "acme-billing"), false},
		{"verify on every endpoint allows any", verify("verify-all", "globex-orders"), true},
		{"inbox scope does not allow verify", verify("inbox-all", "acme-orders"), false},
		{"admin allows verify", verify("admin", "globex-orders"), true},
		// admin
		{"admin allows admin calls", listEndpoints("admin"), true},
		{"verify does not allow admin calls", listEndpoints("verify-all"), false},
		{"inbox does not allow admin calls", listEndpoints("inbox-all"), false},
		{"verify on an endpoint does not allow reading it", getEndpoint("verify-acme", "acme-orders"), false},
		{"admin allows token calls", listTokens("admin"), true},
		{"verify does not allow token calls", listTokens("verify-all"), false},
		{"inbox does not allow token calls", listTokens("inbox-acme"), false},
		// inbox by endpoint filter
		{"inbox prefix allows leasing its endpoints", lease("inbox-acme", "acme-orders", "acme-billing"), true},
		{"inbox prefix denies leasing an endpoint outside it", lease("inbox-acme", "acme-orders", "globex-orders"), false},
		{"inbox prefix denies leasing without a filter", lease("inbox-acme"), false},
		{"inbox on every endpoint allows leasing without a filter", lease("inbox-all"), true},
		{"verify does not allow leasing", lease("verify-all", "acme-orders"), false},
		{"inbox prefix allows listing its dead letters", dead("inbox-acme", "acme-orders"), true},
		{"inbox prefix denies listing dead letters outside it", dead("inbox-acme", "globex-orders"), false},
		{"inbox prefix denies listing every dead letter", dead("inbox-acme"), false},
		// inbox by delivery
		{"inbox prefix allows acking its delivery", ack("inbox-acme", "inbox-acme-orders"), true},
		{"inbox prefix denies acking a delivery outside it", ack("inbox-acme", "inbox-globex-orders"), false},
		{"inbox prefix denies acking a missing delivery", ack("inbox-acme", "inbox-missing"), false},
		{"inbox prefix allows nacking its delivery", nack("inbox-acme", "inbox-acme-billing"), true},
		{"inbox prefix denies nacking a delivery outside it", nack("inbox-acme", "inbox-globex-orders"), false},
		{"inbox prefix allows extending its delivery", extend("inbox-acme", "inbox-acme-orders"), true},
		{"inbox prefix denies extending a delivery outside it", extend("inbox-acme", "inbox-globex-orders"), false},
		{"inbox prefix allows requeueing its delivery", requeue("inbox-acme", "inbox-acme-orders"), true},
		{"inbox prefix denies requeueing a delivery outside it", requeue("inbox-acme", "inbox-globex-orders"), false},
		{"inbox prefix allows discarding its delivery", discard("inbox-acme", "inbox-acme-orders"), true},
		{"inbox prefix denies discarding a delivery outside it", discard("inbox-acme", "inbox-globex-orders"), false},
		{"verify does not allow discarding", discard("verify-all", "inbox-acme-orders"), false},
		{"inbox prefix allows acking many of its deliveries", ackMany("inbox-acme", "inbox-acme-orders", "inbox-acme-billing"), true},
		{"inbox prefix denies acking many with one outside it", ackMany("inbox-acme", "inbox-acme-orders", "inbox-globex-orders"), false},
		{"inbox prefix denies acking many with one missing", ackMany("inbox-acme", "inbox-acme-orders", "inbox-missing"), false},
		{"inbox on every endpoint allows acking many, missing ones too", ackMany("inbox-all", "inbox-globex-orders", "inbox-missing"), true},
		{"verify does not allow acking many", ackMany("verify-all", "inbox-acme-orders"), false},
		{"verify does not allow acking none", ackMany("verify-all"), false},
		// Over the limit the handler refuses it as malformed (INVALID_ARGUMENT), having done
		// nothing; the check does not read the endpoints of every id first.
		{"inbox prefix passes too many acks on to be refused as malformed", func() error {
			err := ackMany("inbox-acme", slices.Repeat([]string{"inbox-globex-orders"}, 101)...)()
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("101 acks by a scoped caller: %v, want InvalidArgument", err)
			}
			return err
		}, true},
		{"verify does not allow too many acks", ackMany("verify-all", slices.Repeat([]string{"inbox-acme-orders"}, 101)...), false},
		{"inbox on every endpoint allows acking any delivery", ack("inbox-all", "inbox-globex-orders"), true},
		{"verify does not allow acking", ack("verify-all", "inbox-acme-orders"), false},
		{"admin allows acking", ack("admin", "inbox-globex-orders"), true},
	}
	// Every decision is counted in hookverify_auth_failures_total: a denial once, under
	// PermissionDenied and the method called; an allowed call not at all.
	beforeDecisions := authFailureCounts(t, e.metrics)
	denials := 0
	for _, d := range decisions {
		if !d.allow {
			denials++
		}
		t.Run(d.name, func(t *testing.T) {
			before := authFailureCounts(t, e.metrics)
			lastMethod = ""
			err := d.call()
			delta := countsSince(before, authFailureCounts(t, e.metrics))
			if d.allow {
				allowed(t, d.name, err)
				if len(delta) != 0 {
					t.Errorf("allowed call counted as an auth failure: %v", delta)
				}
				return
			}
			refusedWith(t, d.name, err, codes.PermissionDenied)
			want := map[authFailureKey]float64{{code: "PermissionDenied", method: lastMethod}: 1}
			if lastMethod == "" || !maps.Equal(delta, want) {
				t.Errorf("hookverify_auth_failures_total moved by %v, want %v", delta, want)
			}
		})
	}
	t.Run("permission denials are counted", func(t *testing.T) {
		after := authFailureCounts(t, e.metrics)
		got := authFailuresWithCode(after, "PermissionDenied") - authFailuresWithCode(beforeDecisions, "PermissionDenied")
		if got < float64(denials) {
			t.Errorf("hookverify_auth_failures_total{code=PermissionDenied} rose by %v over %d denied decisions, want at least %d", got, denials, denials)
		}
		if got := authFailuresWithCode(after, "Unauthenticated") - authFailuresWithCode(beforeDecisions, "Unauthenticated"); got != 0 {
			t.Errorf("hookverify_auth_failures_total{code=Unauthenticated} rose by %v; every caller here is authenticated", got)
		}
	})

	t.Run("denials do not tell existing from missing endpoints or deliveries", func(t *testing.T) {
		pairs := [][2]func() error{
			{verify("verify-acme", "globex-orders"), verify("verify-acme", "globex-missing")},
			{lease("inbox-acme", "globex-orders"), lease("inbox-acme", "globex-missing")},
			{ack("inbox-acme", "inbox-globex-orders"), ack("inbox-acme", "inbox-missing")},
			{ackMany("inbox-acme", "inbox-acme-orders", "inbox-globex-orders"), ackMany("inbox-acme", "inbox-acme-orders", "inbox-missing")},
			{requeue("inbox-acme", "inbox-globex-orders"), requeue("inbox-acme", "inbox-missing")},
			{discard("inbox-acme", "inbox-globex-orders"), discard("inbox-acme", "inbox-missing")},
		}
		for i, p := range pairs {
			existing, missing := status.Convert(p[0]()), status.Convert(p[1]())
			if existing.Code() != codes.PermissionDenied || existing.Code() != missing.Code() || existing.Message() != missing.Message() {
				t.Errorf("pair %d: existing gave %v %q, missing gave %v %q; want the same PERMISSION_DENIED", i,
					existing.Code(), existing.Message(), missing.Code(), missing.Message())
			}
		}
	})

	t.Run("inbox stats show only the endpoints in scope", func(t *testing.T) {
		resp, err := inbox.GetInboxStats(as("inbox-acme"), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.GetEndpoints() {
			got = append(got, s.GetEndpointId())
		}
		if strings.Join(got, ",") != "acme-billing,acme-orders" {
			t.Errorf("inbox-acme sees %v, want acme-billing and acme-orders", got)
		}
		resp, err = inbox.GetInboxStats(as("inbox-all"), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil || len(resp.GetEndpoints()) != 3 {
			t.Errorf("inbox-all sees %v, %v; want 3 endpoints", resp.GetEndpoints(), err)
		}
		_, err = inbox.GetInboxStats(as("verify-all"), &hookverifyv1.GetInboxStatsRequest{})
		refusedWith(t, "GetInboxStats by verify-all", err, codes.PermissionDenied)
	})
}

func TestAuthUnauthenticated(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	conn := e.dial(t, nil)
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	admin := hookverifyv1.NewAdminServiceClient(conn)
	headers := map[string][]string{
		"no credentials":               nil,
		"unknown token":                {"Bearer hvt_" + strings.Repeat("A", 43)},
		"scheme other than Bearer":     {"Basic " + e.tokens["admin"]},
		"bearer without a token":       {"Bearer "},
		"bare token without a scheme":  {e.tokens["admin"]},
		"token with a space inside":    {"Bearer " + e.tokens["admin"] + " x"},
		"two authorization headers":    {"Bearer " + e.tokens["admin"], "Bearer " + e.tokens["admin"]},
		"admin token with one changed": {"Bearer " + e.tokens["admin"][:len(e.tokens["admin"])-1] + "Z"},
	}
	var messages []string
	for name, values := range headers {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			for _, v := range values {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", v)
			}
			_, err := verifier.Verify(ctx, verifyReq("acme-orders"))
			refusedWith(t, "Verify", err, codes.Unauthenticated)
			_, err = admin.ListEndpoints(ctx, &hookverifyv1.ListEndpointsRequest{})
			refusedWith(t, "ListEndpoints", err, codes.Unauthenticated)
			messages = append(messages, status.Convert(err).Message())
		})
	}
	for _, m := range messages[1:] {
		if m != messages[0] {
			t.Errorf("unauthenticated messages differ: %q and %q", messages[0], m)
		}
	}

	t.Run("health and reflection stay open", func(t *testing.T) { healthAndReflectionOpen(t, conn) })

	t.Run("refusals are counted and tokens never logged", func(t *testing.T) {
		unauthenticated := authFailuresWithCode(authFailureCounts(t, e.metrics), "Unauthenticated")
		if unauthenticated < float64(2*len(headers)) {
			t.Errorf("hookverify_auth_failures_total{code=Unauthenticated} = %v, want at least %d", unauthenticated, 2*len(headers))
		}
		logs := string(e.logs.Bytes())
		for name, token := range e.tokens {
			if strings.Contains(logs, token) {
				t.Errorf("the log holds the %s token", name)
			}
		}
		if strings.Contains(logs, e.admin) {
			t.Error("the log holds the bootstrap token")
		}
		if !strings.Contains(logs, `"reason":"unknown API token"`) || !strings.Contains(logs, "malformed authorization header") {
			t.Error("the log does not say why calls were refused")
		}
	})
}

func TestAuthRevokedToken(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	other := e.startInstance(t, authCacheTTL)
	here := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil))
	there := hookverifyv1.NewVerifierServiceClient(e.dialAddr(t, other, nil))
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.tokens["verify-acme"])

	// Both instances accept the token, and have it cached now.
	_, err := here.Verify(ctx, verifyReq("acme-orders"))
	allowed(t, "Verify before revocation", err)
	_, err = there.Verify(ctx, verifyReq("acme-orders"))
	allowed(t, "Verify on the other instance before revocation", err)

	revoked, err := tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: e.ids["verify-acme"]})
	if err != nil || revoked.GetToken().GetRevokedAt() == nil {
		t.Fatalf("RevokeToken = %v, %v", revoked, err)
	}
	// The revoking instance refuses it at once.
	_, err = here.Verify(ctx, verifyReq("acme-orders"))
	refusedWith(t, "Verify right after revocation", err, codes.Unauthenticated)
	// The other refuses it within the cache TTL.
	deadline := time.Now().Add(authCacheTTL + 2*time.Second)
	for {
		_, err = there.Verify(ctx, verifyReq("acme-orders"))
		if status.Code(err) == codes.Unauthenticated {
			break
		}
		allowed(t, "Verify on the other instance", err)
		if time.Now().After(deadline) {
			t.Fatalf("the other instance still accepts the revoked token after %s", authCacheTTL+2*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}

	list, err := tokens.ListTokens(withToken(t.Context(), e.admin), &hookverifyv1.ListTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list.GetTokens() {
		if tok.GetId() == e.ids["verify-acme"] && (tok.GetRevokedAt() == nil || tok.GetLastUsedAt() == nil) {
			t.Errorf("listed token %v: want revoked_at and last_used_at set", tok)
		}
	}
	_, err = tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: "tok_missing"})
	refusedWith(t, "RevokeToken of an unknown id", err, codes.NotFound)
}

func TestAuthClientCertificates(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	now := time.Now()
	valid := e.ca.issue(t, edgeSubject, now.Add(-time.Hour), now.Add(time.Hour), false)
	verify := func(cert *tls.Certificate, endpoint string) error {
		_, err := hookverifyv1.NewVerifierServiceClient(e.dial(t, cert)).Verify(t.Context(), verifyReq(endpoint))
		return err
	}

	t.Run("a mapped subject gets its scopes", func(t *testing.T) {
		allowed(t, "Verify in scope", verify(&valid, "acme-orders"))
		refusedWith(t, "Verify out of scope", verify(&valid, "globex-orders"), codes.PermissionDenied)
		_, err := hookverifyv1.NewAdminServiceClient(e.dial(t, &valid)).ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
		refusedWith(t, "ListEndpoints", err, codes.PermissionDenied)
	})

	t.Run("an unlisted subject may do nothing", func(t *testing.T) {
		cert := e.ca.issue(t, unlistedSubject, now.Add(-time.Hour), now.Add(time.Hour), false)
		refusedWith(t, "Verify", verify(&cert, "acme-orders"), codes.PermissionDenied)
	})

	t.Run("an expired certificate fails the handshake", func(t *testing.T) {
		cert := e.ca.issue(t, edgeSubject, now.Add(-48*time.Hour), now.Add(-24*time.Hour), false)
		err := verify(&cert, "acme-orders")
		if err == nil || status.Code(err) == codes.OK {
			t.Fatal("Verify with an expired client certificate succeeded")
		}
	})

	t.Run("a certificate from another CA fails the handshake", func(t *testing.T) {
		cert := newTestCA(t, "rogue CA").issue(t, edgeSubject, now.Add(-time.Hour), now.Add(time.Hour), false)
		if err := verify(&cert, "acme-orders"); err == nil {
			t.Fatal("Verify with a certificate of an unknown CA succeeded")
		}
	})

	// refusedOnceExpired calls Verify on one connection made with cert, moves the server clock
	// two hours on while the connection stays open, and calls again: allowed, then refused.
	refusedOnceExpired := func(t *testing.T, cert tls.Certificate, before, after string) {
		t.Helper()
		client := hookverifyv1.NewVerifierServiceClient(e.dial(t, &cert))
		_, err := client.Verify(t.Context(), verifyReq("acme-orders"))
		allowed(t, before, err)
		e.clock.Advance(2 * time.Hour)
		defer e.clock.Advance(-2 * time.Hour)
		_, err = client.Verify(t.Context(), verifyReq("acme-orders"))
		refusedWith(t, after, err, codes.Unauthenticated)
	}

	t.Run("a certificate that expires during the connection is refused", func(t *testing.T) {
		// The server clock moves past NotAfter while the verified connection stays open.
		cert := e.ca.issue(t, edgeSubject, now.Add(-time.Hour), now.Add(time.Hour), false)
		refusedOnceExpired(t, cert, "Verify before expiry", "Verify after expiry")
	})

	t.Run("a connection whose issuing intermediate expires is refused", func(t *testing.T) {
		// The leaf outlives the intermediate CA that issued it; past the intermediate's
		// NotAfter a new handshake fails, and so must every call on a connection made before.
		inter := e.ca.intermediate(t, "short-lived intermediate", now.Add(-time.Hour), now.Add(time.Hour))
		cert := inter.issue(t, edgeSubject, now.Add(-time.Hour), now.Add(3*time.Hour), false)
		refusedOnceExpired(t, cert, "Verify while the chain is valid", "Verify after the issuing intermediate expired")
		if logs := string(e.logs.Bytes()); !strings.Contains(logs, "its issuer CN=short-lived intermediate is outside its validity period") {
			t.Error("the log does not say that the intermediate expired")
		}
	})

	t.Run("a subject in another attribute order keeps Go's text", func(t *testing.T) {
		// openssl -subj "/CN=edge-acme/O=Acme" signs CN before O; the subject text, and so
		// the --cert-scopes line that maps it, is still "CN=edge-acme,O=Acme".
		cert := e.ca.issueRawSubject(t, pkix.RDNSequence{
			{{Type: oidCommonName, Value: "edge-acme"}},
			{{Type: oidOrganization, Value: "Acme"}},
		})
		allowed(t, "Verify in scope", verify(&cert, "acme-orders"))
	})

	t.Run("a subject naming CN or SERIALNUMBER twice is refused", func(t *testing.T) {
		// pkix.Name keeps only the last CN (and serialNumber) of a subject: without the
		// refusal, O=Acme, CN=intern-laptop, CN=ops-admin would print, and be mapped and
		// audited, as the admin subject CN=ops-admin,O=Acme.
		for _, c := range []struct {
			name, signed string
			rdns         pkix.RDNSequence
		}{
			{"two CNs", "CN=ops-admin,CN=intern-laptop,O=Acme", pkix.RDNSequence{
				{{Type: oidOrganization, Value: "Acme"}},
				{{Type: oidCommonName, Value: "intern-laptop"}},
				{{Type: oidCommonName, Value: "ops-admin"}},
			}},
			// DER sorts the values of a multi-valued RDN: the shorter first.
			{"two CNs in one RDN", "CN=ops-admin+CN=intern-laptop,O=Acme", pkix.RDNSequence{
				{{Type: oidOrganization, Value: "Acme"}},
				{{Type: oidCommonName, Value: "intern-laptop"}, {Type: oidCommonName, Value: "ops-admin"}},
			}},
			{"two serial numbers", "SERIALNUMBER=2,SERIALNUMBER=1,CN=ops-admin,O=Acme", pkix.RDNSequence{
				{{Type: oidOrganization, Value: "Acme"}},
				{{Type: oidCommonName, Value: "ops-admin"}},
				{{Type: oidSerialNumber, Value: "1"}},
				{{Type: oidSerialNumber, Value: "2"}},
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				cert := e.ca.issueRawSubject(t, c.rdns)
				_, err := hookverifyv1.NewAdminServiceClient(e.dial(t, &cert)).ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
				refusedWith(t, "ListEndpoints", err, codes.Unauthenticated)
				if logs := string(e.logs.Bytes()); !strings.Contains(logs, "client certificate subject "+c.signed+" names ") {
					t.Errorf("the log does not name the subject as signed, %s, and why it was refused", c.signed)
				}
			})
		}
		// Repeats that the subject text keeps are ordinary and accepted.
		cert := e.ca.issueRawSubject(t, pkix.RDNSequence{
			{{Type: oidOrganization, Value: "Acme"}},
			{{Type: oidOrganizationalUnit, Value: "Ops"}},
			{{Type: oidOrganizationalUnit, Value: "Edge"}},
			{{Type: oidCommonName, Value: "edge-acme"}},
		})
		refusedWith(t, "Verify by an unlisted subject with two OUs", verify(&cert, "acme-orders"), codes.PermissionDenied)
	})

	t.Run("a token decides over a certificate", func(t *testing.T) {
		client := hookverifyv1.NewVerifierServiceClient(e.dial(t, &valid))
		_, err := client.Verify(withToken(t.Context(), e.tokens["verify-all"]), verifyReq("globex-orders"))
		allowed(t, "Verify with a broader token", err)
		_, err = client.Verify(withToken(t.Context(), "hvt_unknown_token_value_000000000000"), verifyReq("acme-orders"))
		refusedWith(t, "Verify with an unknown token and a valid cert", err, codes.Unauthenticated)
	})
}

func TestAuthTokenService(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.admin)

	for name, req := range map[string]*hookverifyv1.CreateTokenRequest{
		"no name":           {Scopes: []string{"admin"}},
		"no scopes":         {Name: "x"},
		"unknown scope":     {Name: "x", Scopes: []string{"root"}},
		"admin on endpoint": {Name: "x", Scopes: []string{"admin:acme-*"}},
		"bad endpoint":      {Name: "x", Scopes: []string{"verify:a/b"}},
	} {
		_, err := tokens.CreateToken(ctx, req)
		refusedWith(t, "CreateToken with "+name, err, codes.InvalidArgument)
	}

	resp, err := tokens.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: "edge eu", Scopes: []string{"verify:acme-*", "inbox:acme-orders"}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := resp.GetBearerToken()
	if !strings.HasPrefix(bearer, "hvt_") || len(bearer) < 40 {
		t.Errorf("bearer token %d characters with prefix %q: want hvt_ and 256 random bits", len(bearer), bearer[:min(4, len(bearer))])
	}
	// The store keeps the hash, never the token.
	stored, err := e.store.ListTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range stored {
		if strings.Contains(string(tok.Hash), bearer) || strings.Contains(tok.Name, bearer) {
			t.Errorf("token %s is stored in clear", tok.ID)
		}
	}
	got, err := e.store.TokenByHash(t.Context(), server.HashToken(bearer))
	if err != nil || got.ID != resp.GetToken().GetId() {
		t.Fatalf("TokenByHash(SHA-256 of the token) = %v, %v", got, err)
	}
	// The list shows metadata only: nothing of the token appears in it.
	list, err := tokens.ListTokens(ctx, &hookverifyv1.ListTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetTokens()) != 8 {
		t.Errorf("ListTokens: %d tokens, want 8 (bootstrap, 6 made by the env, this one)", len(list.GetTokens()))
	}
	if strings.Contains(list.String(), bearer) || strings.Contains(list.String(), e.admin) {
		t.Error("ListTokens shows a token")
	}
	// The caller is named by token id in the logs, for audit.
	if !strings.Contains(string(e.logs.Bytes()), `"principal":"token:`) {
		t.Error("token creation is not logged with the caller's principal")
	}

	t.Run("bootstrap stores once and survives revocation", func(t *testing.T) {
		created, err := server.EnsureBootstrapToken(t.Context(), e.store, e.admin, e.clock.Now)
		if err != nil || created {
			t.Fatalf("second EnsureBootstrapToken = %v, %v; want false: an admin token exists", created, err)
		}
		if _, err := server.EnsureBootstrapToken(t.Context(), e.store, "short", e.clock.Now); err == nil || strings.Contains(err.Error(), "short") {
			t.Fatalf("EnsureBootstrapToken with a short token: %v; want an error that does not quote it", err)
		}

		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "fresh.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if created, err := server.EnsureBootstrapToken(t.Context(), st, e.admin, e.clock.Now); err != nil || !created {
			t.Fatalf("EnsureBootstrapToken on a fresh store = %v, %v; want true", created, err)
		}
		list, err := st.ListTokens(t.Context())
		if err != nil || len(list) != 1 || list[0].Name != server.BootstrapTokenName {
			t.Fatalf("tokens after bootstrap: %v, %v", list, err)
		}
		if _, err := st.RevokeToken(t.Context(), list[0].ID, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		// A restart with the variable still set must not bring the revoked token back.
		if created, err := server.EnsureBootstrapToken(t.Context(), st, e.admin, e.clock.Now); err != nil || created {
			t.Fatalf("EnsureBootstrapToken after revocation = %v, %v; want false", created, err)
		}
	})
}

// TestRevokeTokenByItsValue: what a security engineer holds after a leak is the token itself
// (a secret scanner reports the hvt_ string), not its id, and token list cannot map one to
// the other. RevokeToken given the token revokes the token it is; and whether or not it
// matches one, the token is never repeated in the answer, the log or the audit trail.
func TestRevokeTokenByItsValue(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	admin := hookverifyv1.NewAdminServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.admin)
	leaked := e.tokens["verify-acme"]

	resp, err := tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: leaked})
	if err != nil {
		t.Fatalf("RevokeToken(the token itself) = %v", err)
	}
	if resp.GetToken().GetId() != e.ids["verify-acme"] || resp.GetToken().GetRevokedAt() == nil {
		t.Fatalf("RevokeToken(the token itself) = %v; want token %s revoked", resp, e.ids["verify-acme"])
	}
	if strings.Contains(resp.String(), leaked) {
		t.Fatal("the answer repeats the token")
	}
	verifier := hookverifyv1.NewVerifierServiceClient(e.dial(t, nil))
	_, err = verifier.Verify(withToken(t.Context(), leaked), verifyReq("acme-orders"))
	refusedWith(t, "Verify with the token revoked by its value", err, codes.Unauthenticated)

	unknown := "hvt_" + strings.Repeat("Q", 43)
	_, err = tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: unknown})
	refusedWith(t, "RevokeToken of an unknown token", err, codes.NotFound)
	if strings.Contains(status.Convert(err).Message(), unknown) {
		t.Errorf("the error repeats the token: %v", err)
	}

	audit, err := admin.ListAuditEvents(ctx, &hookverifyv1.ListAuditEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var revokes int
	for _, ev := range audit.GetEvents() {
		if strings.Contains(ev.GetDetail(), leaked) {
			t.Errorf("audit event %v holds the token", ev)
		}
		if ev.GetAction() == "token.revoke" && strings.Contains(ev.GetDetail(), e.ids["verify-acme"]) {
			revokes++
		}
	}
	if revokes != 1 {
		t.Errorf("%d token.revoke events naming %s, want 1", revokes, e.ids["verify-acme"])
	}
	logs := string(e.logs.Bytes())
	for _, token := range []string{leaked, unknown} {
		if strings.Contains(logs, token) {
			t.Errorf("the log holds the token %s…", token[:8])
		}
	}
}

// TestRetireSecretErrorDoesNotRepeatTheID: secret retire takes an id, but what gets pasted
// into --id by mistake is often the secret itself (it is what the provider's dashboard shows).
// The refusal must not print it back: errors land in terminals and CI logs.
func TestRetireSecretErrorDoesNotRepeatTheID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	secret, _ := e.setup(t, stripeProvider, "shop")
	_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shop", SecretId: secret})
	wantCode(t, err, codes.NotFound)
	if strings.Contains(status.Convert(err).Message(), secret) {
		t.Fatalf("RetireSecret's error repeats the secret given as its id: %v", err)
	}
	if strings.Contains(string(e.transcript.Bytes()), secret) || strings.Contains(string(e.logs.Bytes()), secret) {
		t.Fatal("the transcript or the log holds the secret")
	}
}

// TestRevokeBootstrapTokenByItsValue: the bootstrap token is the operator's own string
// (openssl rand -base64 32), not hvt_..., and it is the token most likely to leak (it sits in
// an environment variable or a Kubernetes secret). README promises that a leaked token is
// revoked by its value (token revoke --id -) and never repeated in the answer or the log: the
// bootstrap token taken for an id was neither revoked nor kept out of the NotFound message,
// which the server's log repeats.
func TestRevokeBootstrapTokenByItsValue(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tokens := hookverifyv1.NewTokenServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.tokens["admin"])
	leaked := e.admin // the bootstrap token

	resp, err := tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: leaked})
	if err != nil {
		if strings.Contains(status.Convert(err).Message(), leaked) {
			t.Errorf("the error repeats the token")
		}
		t.Fatalf("RevokeToken(the bootstrap token itself) = %v", status.Code(err))
	}
	if resp.GetToken().GetName() != "bootstrap" || resp.GetToken().GetRevokedAt() == nil {
		t.Fatalf("RevokeToken(the bootstrap token itself) = %v; want the bootstrap token revoked", resp)
	}
	_, err = tokens.ListTokens(withToken(t.Context(), leaked), &hookverifyv1.ListTokensRequest{})
	refusedWith(t, "ListTokens with the bootstrap token revoked by its value", err, codes.Unauthenticated)

	unknown := "not-a-token-" + strings.Repeat("Z", 40) // an operator-chosen token that matches none
	_, err = tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: unknown})
	refusedWith(t, "RevokeToken of an unknown token", err, codes.NotFound)
	if strings.Contains(status.Convert(err).Message(), unknown) {
		t.Errorf("the error repeats the token given")
	}
	logs := string(e.logs.Bytes())
	for _, token := range []string{leaked, unknown} {
		if strings.Contains(logs, token) {
			t.Errorf("the log holds the token %s…", token[:8])
		}
	}

	// An id is still an id, and one that matches nothing is named (it is no secret).
	_, err = tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: "tok_00000000deadbeef"})
	refusedWith(t, "RevokeToken of an unknown id", err, codes.NotFound)
	if !strings.Contains(status.Convert(err).Message(), "tok_00000000deadbeef") {
		t.Errorf("RevokeToken of an unknown id = %v; want the id named", err)
	}
}

// TestUnauthenticatedFloodLogsBounded: anyone who reaches the port can send calls without a
// token, or with an unknown one. Each used to log two lines at INFO ("call refused" and the
// rpc line), so a flood filled the disk; each reason is now logged about once per interval,
// with the count held back, while the metric counts every call. Refusals of permission, which
// name an authenticated caller, are still logged one by one.
func TestUnauthenticatedFloodLogsBounded(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	conn := e.dial(t, nil)
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	before := authFailuresWithCode(authFailureCounts(t, e.metrics), "Unauthenticated")
	const flood = 200
	for i := range flood {
		ctx := t.Context()
		if i%2 == 1 {
			ctx = withToken(ctx, "hvt_"+strings.Repeat("0", 43))
		}
		if _, err := verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "acme-orders", Method: "POST", Url: "https://h.example/x"}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("call %d: %v, want Unauthenticated", i, err)
		}
	}
	ctx := withToken(t.Context(), e.tokens["verify-acme"])
	for range 3 {
		if _, err := verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "globex-orders", Method: "POST", Url: "https://h.example/x"}); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("out of scope: %v, want PermissionDenied", err)
		}
	}
	if got := authFailuresWithCode(authFailureCounts(t, e.metrics), "Unauthenticated") - before; got != flood {
		t.Errorf("hookverify_auth_failures_total{code=Unauthenticated} moved by %v, want %d: the metric counts every refusal", got, flood)
	}
	var refused, permission, infoRPC int
	for _, line := range strings.Split(string(e.logs.Bytes()), "\n") {
		var l struct{ Level, Msg, Code string }
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch {
		case l.Msg == "call refused" && l.Code == "Unauthenticated":
			refused++
		case l.Msg == "call refused" && l.Code == "PermissionDenied":
			permission++
		case l.Msg == "rpc" && l.Level == "INFO" && (l.Code == "Unauthenticated" || l.Code == "PermissionDenied"):
			infoRPC++
		}
	}
	// Two reasons (no token, an unknown one), each logged once or twice within the test (a
	// slow machine may cross an interval), against 200 calls.
	if refused > 4 {
		t.Errorf("%d refusal lines for %d unauthenticated calls of two reasons, want a few", refused, flood)
	}
	if refused == 0 {
		t.Error("no refusal logged at all: the first of each reason must be")
	}
	if permission != 3 {
		t.Errorf("%d lines for 3 calls refused permission, want each logged", permission)
	}
	if infoRPC != 0 {
		t.Errorf("%d INFO rpc lines for refused calls, which refuse already logs", infoRPC)
	}
}

// healthAndReflectionOpen checks that health checks and reflection answer a call without
// credentials on conn.
func healthAndReflectionOpen(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health Check without credentials = %v, %v; want SERVING", resp, err)
	}
	if _, err := healthpb.NewHealthClient(conn).List(t.Context(), &healthpb.HealthListRequest{}); err != nil {
		t.Fatalf("health List without credentials: %v", err)
	}
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("reflection without credentials: %v", err)
	}
}
