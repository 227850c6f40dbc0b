package server_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/crdb"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// The suite runs every server-level test once per storage backend, through a real gRPC server
// and client, with an injected clock. Nothing is mocked: SQLite is a file in t.TempDir() and
// PostgreSQL a fresh database per test on a throwaway cluster started by internal/pgtest.

// epoch is where every test clock starts: a whole second, so that signed unix timestamps and
// the server's clock agree exactly.
var epoch = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

// backend is one storage implementation the suite runs against.
type backend struct {
	name string
	// newDatabase prepares a fresh, empty database for t and returns what open needs to reach it.
	newDatabase func(t *testing.T) string
	// open opens a new handle on the database.
	open func(ctx context.Context, dsn string) (storage.Store, error)
}

var backends = []backend{
	{
		name:        "sqlite",
		newDatabase: func(t *testing.T) string { return filepath.Join(t.TempDir(), "hookverify.db") },
		open: func(ctx context.Context, path string) (storage.Store, error) {
			return sqlite.Open(ctx, path)
		},
	},
	{
		name:        "postgres",
		newDatabase: func(t *testing.T) string { return pgtest.Shared(t).NewDatabase(t) },
		open: func(ctx context.Context, url string) (storage.Store, error) {
			return crdb.Open(ctx, url)
		},
	},
}

// eachBackend runs fn as a parallel subtest per backend.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// openStore opens and migrates a store on dsn, closed when t ends.
func openStore(t *testing.T, b backend, dsn string) storage.Store {
	t.Helper()
	st, err := b.open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("open %s store: %v", b.name, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Errorf("close %s store: %v", b.name, err)
		}
	})
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatalf("migrate %s store: %v", b.name, err)
	}
	return st
}

// clock is the injected server clock. Tests move it explicitly; it never moves by itself.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's world: a database, a clock, a keyring, a debug log and a server on it.
type env struct {
	*instance
	backend backend
	dsn     string
	store   storage.Store
	clock   *clock
	keyring *secretbox.Keyring
	// masterKey is the keyring's current key.
	masterKey []byte
	// logs receives every server log line, as JSON, at debug level.
	logs *syncbuf.Buffer
	// transcript receives every RPC response (protojson) and every error status message.
	transcript *syncbuf.Buffer
	// options, when set, adjusts the server options of every instance the env starts.
	options func(*server.Options)
}

// instance is one server.Server served over bufconn, with clients connected to it.
type instance struct {
	srv      *server.Server
	verifier hookverifyv1.VerifierServiceClient
	admin    hookverifyv1.AdminServiceClient
	inbox    hookverifyv1.InboxServiceClient
	tokens   hookverifyv1.TokenServiceClient
	health   healthpb.HealthClient
}

// newEnv makes a fresh database on b and a server on it.
func newEnv(t *testing.T, b backend) *env {
	t.Helper()
	dsn := b.newDatabase(t)
	return newEnvOn(t, b, dsn, openStore(t, b, dsn))
}

// newEnvOn makes an env whose first server uses st (which may be nil: no store yet).
func newEnvOn(t *testing.T, b backend, dsn string, st storage.Store) *env {
	t.Helper()
	key, kr := mustKeyring(t)
	e := &env{
		backend:    b,
		dsn:        dsn,
		store:      st,
		clock:      &clock{now: epoch},
		keyring:    kr,
		masterKey:  key,
		logs:       &syncbuf.Buffer{},
		transcript: &syncbuf.Buffer{},
	}
	e.instance = e.start(t, st)
	return e
}

// newEnvOver makes a fresh database on b and an env whose store is wrap of a store on it: a
// real store some of whose calls the test counts or fails. Its first instance has no store;
// the test starts its instances on the store returned, with the options it sets.
func newEnvOver[S storage.Store](t *testing.T, b backend, wrap func(storage.Store) S) (*env, S) {
	t.Helper()
	dsn := b.newDatabase(t)
	st := wrap(openStore(t, b, dsn))
	e := newEnvOn(t, b, dsn, nil)
	e.store = st
	return e, st
}

// start runs another server.Server sharing the env's clock, keyring and log, on st (nil: no
// store yet), and connects clients to it.
func (e *env) start(t *testing.T, st storage.Store) *instance {
	t.Helper()
	logger := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := server.Options{
		Keyring:   e.keyring,
		Protocols: protocol.Default(),
		Logger:    logger,
		Now:       e.clock.Now,
	}
	if e.options != nil {
		e.options(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	if st != nil {
		srv.SetStore(st)
	}
	g := srv.NewGRPCServer()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	conn, err := grpc.NewClient("passthrough:///hookverify",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(e.record),
	)
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &instance{
		srv:      srv,
		verifier: hookverifyv1.NewVerifierServiceClient(conn),
		admin:    hookverifyv1.NewAdminServiceClient(conn),
		inbox:    hookverifyv1.NewInboxServiceClient(conn),
		tokens:   hookverifyv1.NewTokenServiceClient(conn),
		health:   healthpb.NewHealthClient(conn),
	}
}

// record is a client interceptor keeping every response and error message in the transcript,
// so that tests can search everything a caller ever saw.
func (e *env) record(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	var line []byte
	if err != nil {
		line, _ = protojson.Marshal(status.Convert(err).Proto())
	} else if m, ok := reply.(proto.Message); ok {
		line, _ = protojson.Marshal(m)
	}
	_, _ = e.transcript.Write(append(line, '\n'))
	return err
}

// count returns how many inbox records the store holds, in every scope.
func (e *env) count(t *testing.T) int64 {
	t.Helper()
	n, err := e.store.CountDeliveries(t.Context(), "")
	if err != nil {
		t.Fatalf("CountDeliveries: %v", err)
	}
	return n
}

// --- Admin helpers ---

// createEndpoint creates ep and returns it as stored.
func (in *instance) createEndpoint(t *testing.T, ep *hookverifyv1.Endpoint) *hookverifyv1.Endpoint {
	t.Helper()
	resp, err := in.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: ep})
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", ep.GetId(), err)
	}
	return resp.GetEndpoint()
}

// addSecret adds secret to the endpoint and returns its id.
func (in *instance) addSecret(t *testing.T, endpointID, secret string) string {
	t.Helper()
	resp, err := in.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: endpointID, Secret: secret})
	if err != nil {
		t.Fatalf("AddSecret(%s): %v", endpointID, err)
	}
	return resp.GetSecret().GetId()
}

// setup creates an endpoint of the provider with one fresh secret and returns the secret and
// its id.
func (in *instance) setup(t *testing.T, p provider, endpointID string) (secret, secretID string) {
	t.Helper()
	in.createEndpoint(t, &hookverifyv1.Endpoint{Id: endpointID, Provider: p.name})
	secret = p.newSecret()
	return secret, in.addSecret(t, endpointID, secret)
}

// --- Verify helpers ---

// call sends a delivery and returns the answer or the gRPC error, checking on every answer
// that its HTTP reply matches its verdict: 2xx for ACCEPTED and DUPLICATE, 4xx for REJECTED.
func (in *instance) call(t *testing.T, req *hookverifyv1.VerifyRequest, opts ...grpc.CallOption) (*hookverifyv1.VerifyResponse, error) {
	t.Helper()
	resp, err := in.verifier.Verify(t.Context(), req, opts...)
	if err != nil {
		return nil, err
	}
	checkReply(t, resp)
	return resp, nil
}

func checkReply(t *testing.T, resp *hookverifyv1.VerifyResponse) {
	t.Helper()
	code := resp.GetReply().GetStatus()
	switch resp.GetVerdict() {
	case hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE:
		if code < 200 || code > 299 {
			t.Errorf("%s answered with HTTP %d, want 2xx", resp.GetVerdict(), code)
		}
		if resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED {
			t.Errorf("%s carries reject reason %s", resp.GetVerdict(), resp.GetRejectReason())
		}
		if resp.GetEventId() == "" || resp.GetOperationKey() == "" || resp.GetInboxId() == "" || resp.GetSecretId() == "" || resp.GetFirstReceivedAt() == nil {
			t.Errorf("%s lacks event_id, operation_key, inbox_id, secret_id or first_received_at: %v", resp.GetVerdict(), resp)
		}
	case hookverifyv1.Verdict_VERDICT_REJECTED:
		if code < 400 || code > 499 {
			t.Errorf("REJECTED %s answered with HTTP %d, want 4xx", resp.GetRejectReason(), code)
		}
		if resp.GetRejectReason() == hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED {
			t.Errorf("REJECTED without a reason: %v", resp)
		}
		if resp.GetOperationKey() != "" || resp.GetInboxId() != "" {
			t.Errorf("REJECTED carries an operation key or inbox id: %v", resp)
		}
	case hookverifyv1.Verdict_VERDICT_HANDSHAKE:
		if code < 200 || code > 299 || resp.GetOperationKey() != "" || resp.GetInboxId() != "" {
			t.Errorf("HANDSHAKE answered with HTTP %d, operation key %q, inbox id %q: want 2xx and neither", code, resp.GetOperationKey(), resp.GetInboxId())
		}
	default:
		t.Errorf("verdict %s", resp.GetVerdict())
	}
}

// verify sends a delivery that must get an answer (not a gRPC error).
func (in *instance) verify(t *testing.T, req *hookverifyv1.VerifyRequest, opts ...grpc.CallOption) *hookverifyv1.VerifyResponse {
	t.Helper()
	resp, err := in.call(t, req, opts...)
	if err != nil {
		t.Fatalf("Verify(%s): %v", req.GetEndpointId(), err)
	}
	return resp
}

// accept sends a delivery that must be ACCEPTED.
func (in *instance) accept(t *testing.T, req *hookverifyv1.VerifyRequest, opts ...grpc.CallOption) *hookverifyv1.VerifyResponse {
	t.Helper()
	resp := in.verify(t, req, opts...)
	if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_ACCEPTED {
		t.Fatalf("Verify(%s) = %s %s (%s), want ACCEPTED", req.GetEndpointId(), resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail())
	}
	return resp
}

// reject sends a delivery that must be REJECTED for reason.
func (in *instance) reject(t *testing.T, req *hookverifyv1.VerifyRequest, reason hookverifyv1.RejectReason) *hookverifyv1.VerifyResponse {
	t.Helper()
	resp := in.verify(t, req)
	if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_REJECTED || resp.GetRejectReason() != reason {
		t.Fatalf("Verify(%s) = %s %s (%s), want REJECTED %s", req.GetEndpointId(), resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail(), reason)
	}
	return resp
}

// duplicate sends a redelivery of first that must be DUPLICATE of it.
func (in *instance) duplicate(t *testing.T, req *hookverifyv1.VerifyRequest, first *hookverifyv1.VerifyResponse) *hookverifyv1.VerifyResponse {
	t.Helper()
	resp := in.verify(t, req)
	if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_DUPLICATE {
		t.Fatalf("Verify(%s) = %s %s (%s), want DUPLICATE", req.GetEndpointId(), resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail())
	}
	sameClaim(t, resp, first)
	return resp
}

// sameClaim checks that resp describes the claim first made.
func sameClaim(t *testing.T, resp, first *hookverifyv1.VerifyResponse) {
	t.Helper()
	if resp.GetOperationKey() != first.GetOperationKey() || resp.GetInboxId() != first.GetInboxId() || resp.GetEventId() != first.GetEventId() {
		t.Errorf("claim (key %s, inbox %s, event %q), want the first one's (key %s, inbox %s, event %q)",
			resp.GetOperationKey(), resp.GetInboxId(), resp.GetEventId(), first.GetOperationKey(), first.GetInboxId(), first.GetEventId())
	}
	if !resp.GetFirstReceivedAt().AsTime().Equal(first.GetFirstReceivedAt().AsTime()) {
		t.Errorf("first_received_at %v, want %v", resp.GetFirstReceivedAt().AsTime(), first.GetFirstReceivedAt().AsTime())
	}
}

// wantCode checks that err is a gRPC status with the code.
func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

// --- Providers and signed deliveries ---

// provider describes how the tests make secrets, bodies and signed deliveries for a protocol.
type provider struct {
	name string
	// newSecret returns a fresh random secret in the form the provider displays.
	newSecret func() string
	// sigHeaders are the headers carrying signatures, removed to make an unsigned copy.
	sigHeaders []string
	// body returns a realistic body; for Stripe it carries the event id.
	body func(eventID string) []byte
}

var (
	stripeProvider = provider{
		name:       "stripe",
		newSecret:  func() string { return "whsec_" + randomAlnum(32) },
		sigHeaders: []string{"Stripe-Signature"},
		body: func(eventID string) []byte {
			id, _ := json.Marshal(eventID)
			// Odd spacing and key order on purpose: the bytes, not the JSON, are signed.
			return []byte(`{"id": ` + string(id) + `,  "object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","amount_paid":4200}}}` + "\n")
		},
	}
	githubProvider = provider{
		name:       "github",
		newSecret:  func() string { return randomAlnum(40) },
		sigHeaders: []string{"X-Hub-Signature-256", "X-Hub-Signature"},
		body: func(string) []byte {
			return []byte(`{"action":"opened", "number":7,"repository":{"full_name":"octo/hello"}}`)
		},
	}
	standardProvider = provider{
		name: "standard-webhooks",
		newSecret: func() string {
			return "whsec_" + base64.StdEncoding.EncodeToString(randomBytes(32))
		},
		sigHeaders: []string{"webhook-signature"},
		body: func(string) []byte {
			return []byte(`{"type":"invoice.paid","timestamp":"2031-03-04T05:06:07Z","data":{"amount":4200}}`)
		},
	}
	providers = []provider{stripeProvider, githubProvider, standardProvider}
)

// sign returns a delivery of body for the endpoint, signed by the protocol's own Sign at the
// time at with each of the secrets, between ordinary headers the edge forwards (one repeated).
func sign(t *testing.T, p provider, endpointID, eventID string, body []byte, at time.Time, secrets ...string) *hookverifyv1.VerifyRequest {
	t.Helper()
	proto, ok := protocol.Default().Lookup(p.name)
	if !ok {
		t.Fatalf("protocol %s is not registered", p.name)
	}
	url := "https://hooks.example.com/" + endpointID + "?source=test"
	signed, err := proto.Sign(protocol.SignInput{Body: body, EventID: eventID, Timestamp: at, Method: "POST", URL: url}, secrets)
	if err != nil {
		t.Fatalf("%s Sign: %v", p.name, err)
	}
	req := &hookverifyv1.VerifyRequest{EndpointId: endpointID, Body: body, Method: "POST", Url: url}
	req.Headers = append(req.Headers,
		&hookverifyv1.HeaderField{Name: "Content-Type", Value: "application/json; charset=utf-8"},
		&hookverifyv1.HeaderField{Name: "X-Forwarded-For", Value: "203.0.113.7"},
	)
	for _, h := range signed {
		req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
	}
	req.Headers = append(req.Headers,
		&hookverifyv1.HeaderField{Name: "X-Forwarded-For", Value: "198.51.100.1"},
		&hookverifyv1.HeaderField{Name: "User-Agent", Value: "hookverify-test/1"},
	)
	return req
}

// deliver is sign with the provider's usual body for eventID, at the env's current time.
func (e *env) deliver(t *testing.T, p provider, endpointID, eventID string, secrets ...string) *hookverifyv1.VerifyRequest {
	t.Helper()
	return sign(t, p, endpointID, eventID, p.body(eventID), e.clock.Now(), secrets...)
}

// header returns the first value of the named header (case-insensitive).
func header(req *hookverifyv1.VerifyRequest, name string) string {
	for _, h := range req.GetHeaders() {
		if strings.EqualFold(h.GetName(), name) {
			return h.GetValue()
		}
	}
	return ""
}

// withHeader returns a copy of req with every header of the name set to value.
func withHeader(req *hookverifyv1.VerifyRequest, name, value string) *hookverifyv1.VerifyRequest {
	out := proto.CloneOf(req)
	for _, h := range out.Headers {
		if strings.EqualFold(h.GetName(), name) {
			h.Value = value
		}
	}
	return out
}

// withoutHeaders returns a copy of req without the named headers.
func withoutHeaders(req *hookverifyv1.VerifyRequest, names ...string) *hookverifyv1.VerifyRequest {
	out := proto.CloneOf(req)
	out.Headers = nil
	for _, h := range req.GetHeaders() {
		drop := false
		for _, n := range names {
			drop = drop || strings.EqualFold(h.GetName(), n)
		}
		if !drop {
			out.Headers = append(out.Headers, proto.CloneOf(h))
		}
	}
	return out
}

// renameHeaders returns a copy of req with every header name starting with from (any case)
// given the prefix to instead.
func renameHeaders(req *hookverifyv1.VerifyRequest, from, to string) *hookverifyv1.VerifyRequest {
	out := proto.CloneOf(req)
	for _, h := range out.Headers {
		if len(h.Name) >= len(from) && strings.EqualFold(h.Name[:len(from)], from) {
			h.Name = to + h.Name[len(from):]
		}
	}
	return out
}

// withEndpoint returns a copy of req addressed to another endpoint.
func withEndpoint(req *hookverifyv1.VerifyRequest, endpointID string) *hookverifyv1.VerifyRequest {
	out := proto.CloneOf(req)
	out.EndpointId = endpointID
	return out
}

// withBody returns a copy of req with another body and the same headers.
func withBody(req *hookverifyv1.VerifyRequest, body []byte) *hookverifyv1.VerifyRequest {
	out := proto.CloneOf(req)
	out.Body = body
	return out
}

// --- Randomness ---

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomAlnum(n int) string {
	b := randomBytes(n)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return string(b)
}

// eventID returns a fresh event id in the provider's usual form.
func eventID(p provider) string {
	switch p.name {
	case "stripe":
		return "evt_" + randomAlnum(24)
	case "github":
		b := randomBytes(16)
		return strings.Join([]string{hex.EncodeToString(b[:4]), hex.EncodeToString(b[4:6]), hex.EncodeToString(b[6:8]), hex.EncodeToString(b[8:10]), hex.EncodeToString(b[10:])}, "-")
	}
	return "msg_" + randomAlnum(27)
}

// countsSince returns how much each count moved between two snapshots, omitting those that did
// not move (metric series, store reads).
func countsSince[K comparable, V int | float64](before, after map[K]V) map[K]V {
	moved := map[K]V{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			moved[k] = d
		}
	}
	return moved
}

// mustKey returns a fresh master key.
func mustKey(tb testing.TB) []byte {
	tb.Helper()
	key, err := secretbox.NewKey()
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// mustKeyring returns a fresh master key and a keyring holding only it.
func mustKeyring(tb testing.TB) ([]byte, *secretbox.Keyring) {
	tb.Helper()
	key := mustKey(tb)
	kr, err := secretbox.NewKeyring(key)
	if err != nil {
		tb.Fatal(err)
	}
	return key, kr
}
