package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// Authentication must not wait for a call's message: a caller holding no credential at all
// could otherwise make the server read and hold, per connection, MaxConcurrentStreams messages
// of up to MaxRecvMsgSize each, sending each all but its last byte.

// bigBody is a Verify body far above what a refused caller should get the server to read.
const bigBody = 8 << 20

// readCounter is a stats handler that records, per method, the calls gRPC handed to the
// server (their headers) and the message bytes it read for them.
type readCounter struct {
	mu      sync.Mutex
	calls   map[string]int
	payload map[string]int
}

type methodKey struct{}

func newReadCounter() *readCounter {
	return &readCounter{calls: map[string]int{}, payload: map[string]int{}}
}

func (r *readCounter) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, methodKey{}, info.FullMethodName)
}

func (r *readCounter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	method, _ := ctx.Value(methodKey{}).(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch s := s.(type) {
	case *stats.InHeader:
		r.calls[method]++
	case *stats.InPayload:
		r.payload[method] += s.WireLength
	}
}

func (r *readCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (r *readCounter) HandleConn(context.Context, stats.ConnStats)                       {}

// read returns the calls and message bytes of method seen so far.
func (r *readCounter) read(method string) (calls, payload int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method], r.payload[method]
}

func bigVerifyReq(endpointID string) *hookverifyv1.VerifyRequest {
	req := verifyReq(endpointID)
	req.Body = bytes.Repeat([]byte("x"), bigBody)
	return req
}

// unauthenticatedVerifyCalls reads hookverify_grpc_requests_total{Verify,Unauthenticated}.
func unauthenticatedVerifyCalls(t *testing.T, m *server.Metrics) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "hookverify_grpc_requests_total" {
			continue
		}
		for _, series := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range series.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == hookverifyv1.VerifierService_Verify_FullMethodName && labels["code"] == "Unauthenticated" {
				return series.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// refusalLines returns the reasons of the "call refused" lines the env logged as
// unauthenticated.
func refusalLines(e *authEnv) []string {
	var reasons []string
	for _, line := range strings.Split(string(e.logs.Bytes()), "\n") {
		var l struct{ Msg, Code, Reason string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "call refused" && l.Code == "Unauthenticated" {
			reasons = append(reasons, l.Reason)
		}
	}
	return reasons
}

// TestTapRefusesBeforeReadingTheMessage: a call that carries no credential, or none of a
// possible form, is refused as its headers arrive; gRPC never reads its message.
func TestTapRefusesBeforeReadingTheMessage(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	rc := newReadCounter()
	addr := e.startInstance(t, authCacheTTL, grpc.StatsHandler(rc))
	conn := e.dialAddr(t, addr, nil)
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	const verify = hookverifyv1.VerifierService_Verify_FullMethodName

	// The message every unauthenticated caller gets today (TestAuthUnauthenticated checks they
	// are all alike), and which the CLI's hints follow.
	_, err := hookverifyv1.NewAdminServiceClient(e.dial(t, nil)).ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
	refusedWith(t, "ListEndpoints without credentials", err, codes.Unauthenticated)
	want := status.Convert(err).Message()

	before := authFailureCounts(t, e.metrics)[authFailureKey{code: "Unauthenticated", method: verify}]
	callsBefore := unauthenticatedVerifyCalls(t, e.metrics)
	headers := map[string][]string{
		"no credentials":              nil,
		"scheme other than Bearer":    {"Basic " + e.tokens["admin"]},
		"bearer without a token":      {"Bearer "},
		"bare token without a scheme": {e.tokens["admin"]},
		"two authorization headers":   {"Bearer " + e.tokens["admin"], "Bearer " + e.tokens["admin"]},
		"token shorter than any":      {"Bearer hvt_short"},
	}
	for name, values := range headers {
		ctx := t.Context()
		for _, v := range values {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", v)
		}
		_, err := verifier.Verify(ctx, bigVerifyReq("acme-orders"))
		refusedWith(t, name, err, codes.Unauthenticated)
		if got := status.Convert(err).Message(); got != want {
			t.Errorf("%s: message %q, want the usual %q", name, got, want)
		}
	}
	if calls, payload := rc.read(verify); calls != 0 || payload != 0 {
		t.Errorf("gRPC handed the server %d refused Verify calls and read %d bytes of their messages, want none: "+
			"a caller without credentials made the server read its message", calls, payload)
	}
	if got := authFailureCounts(t, e.metrics)[authFailureKey{code: "Unauthenticated", method: verify}] - before; got != float64(len(headers)) {
		t.Errorf("hookverify_auth_failures_total{Unauthenticated,Verify} moved by %v, want %d", got, len(headers))
	}
	if got := unauthenticatedVerifyCalls(t, e.metrics) - callsBefore; got != float64(len(headers)) {
		t.Errorf("hookverify_grpc_requests_total{Verify,Unauthenticated} moved by %v, want %d: it counts every call", got, len(headers))
	}
	reasons := strings.Join(refusalLines(e), "\n")
	for _, want := range []string{"no API token and no verified client certificate", "malformed authorization header", "several authorization headers"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("no refusal logged with reason %q; logged:\n%s", want, reasons)
		}
	}
	logs := string(e.logs.Bytes())
	for name, token := range e.tokens {
		if strings.Contains(logs, token) {
			t.Errorf("the log holds the %s token", name)
		}
	}
}

// TestTapRefusesAnIncompleteMessage is the attack itself: a caller without credentials opens
// a Verify stream and sends its message all but the rest. The refusal must come while the
// message is incomplete; a server that authenticates only a whole message would wait (and hold
// what came) until the caller gives up.
func TestTapRefusesAnIncompleteMessage(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	conn, err := tls.Dial("tcp", e.addr, &tls.Config{RootCAs: e.ca.pool(), NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", hookverifyv1.VerifierService_Verify_FullMethodName},
		{":authority", e.addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	const stream = 1
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	// A gRPC message prefix announcing bigBody bytes, and the first few of them (within the
	// initial flow-control window): the rest never comes.
	data := make([]byte, 5+1024)
	binary.BigEndian.PutUint32(data[1:5], bigBody)
	if err := fr.WriteData(stream, false, data); err != nil {
		t.Fatal(err)
	}
	// Generous: a server that answers only once the message is whole never answers; one that
	// refuses at the headers answers within a round trip.
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("no answer to a call without credentials whose message is incomplete: the server waits for the message before authenticating")
			}
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != stream {
				continue
			}
			code := f.PseudoValue("status")
			for _, hf := range f.RegularFields() {
				if hf.Name == "grpc-status" {
					if got, _ := strconv.Atoi(hf.Value); codes.Code(got) != codes.Unauthenticated {
						t.Fatalf("grpc-status %s (%s), want UNAUTHENTICATED", hf.Value, f.Fields)
					}
					return
				}
			}
			t.Fatalf("answer headers without grpc-status (:status %s): %v", code, f.Fields)
		case *http2.RSTStreamFrame:
			if f.StreamID == stream {
				t.Fatalf("stream reset (%v) without a status", f.ErrCode)
			}
		case *http2.GoAwayFrame:
			t.Fatalf("connection closed: %v", f.ErrCode)
		}
	}
}

// TestTapLetsCredentialedCallsThrough: what carries a credential of a possible form, and the
// open methods, behave as before the tap: a valid token or client certificate is let in, a
// well-formed unknown token is refused once its message is in (by a token lookup, as before).
func TestTapLetsCredentialedCallsThrough(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	rc := newReadCounter()
	addr := e.startInstance(t, authCacheTTL, grpc.StatsHandler(rc))
	const verify = hookverifyv1.VerifierService_Verify_FullMethodName

	t.Run("valid token", func(t *testing.T) {
		conn := e.dialAddr(t, addr, nil)
		_, err := hookverifyv1.NewVerifierServiceClient(conn).Verify(withToken(t.Context(), e.tokens["verify-acme"]), bigVerifyReq("acme-orders"))
		allowed(t, "Verify with a valid token", err)
		_, err = hookverifyv1.NewAdminServiceClient(conn).ListEndpoints(withToken(t.Context(), e.admin), &hookverifyv1.ListEndpointsRequest{})
		allowed(t, "ListEndpoints with the bootstrap token", err)
	})
	t.Run("valid token, out of scope", func(t *testing.T) {
		conn := e.dialAddr(t, addr, nil)
		_, err := hookverifyv1.NewVerifierServiceClient(conn).Verify(withToken(t.Context(), e.tokens["verify-acme"]), verifyReq("globex-orders"))
		refusedWith(t, "Verify out of scope", err, codes.PermissionDenied)
	})
	t.Run("well-formed unknown token", func(t *testing.T) {
		conn := e.dialAddr(t, addr, nil)
		_, before := rc.read(verify)
		for _, token := range []string{"hvt_" + strings.Repeat("A", 43), strings.Repeat("b", 32)} {
			_, err := hookverifyv1.NewVerifierServiceClient(conn).Verify(withToken(t.Context(), token), bigVerifyReq("acme-orders"))
			refusedWith(t, "Verify with an unknown token", err, codes.Unauthenticated)
		}
		if _, after := rc.read(verify); after-before < 2*bigBody {
			t.Errorf("read %d bytes of Verify messages with unknown tokens, want both read: the tap looked the token up, or refused a possible one", after-before)
		}
		if !strings.Contains(strings.Join(refusalLines(e), "\n"), "unknown API token") {
			t.Error("an unknown token's refusal was not logged with its reason")
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		cert := e.ca.issue(t, edgeSubject, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), false)
		conn := e.dialAddr(t, addr, &cert)
		_, err := hookverifyv1.NewVerifierServiceClient(conn).Verify(t.Context(), bigVerifyReq("acme-orders"))
		allowed(t, "Verify with a client certificate", err)
		_, err = hookverifyv1.NewVerifierServiceClient(conn).Verify(t.Context(), verifyReq("globex-orders"))
		refusedWith(t, "Verify out of the certificate's scope", err, codes.PermissionDenied)
		// A token, when sent, decides alone, even one too short to be any.
		_, err = hookverifyv1.NewVerifierServiceClient(conn).Verify(withToken(t.Context(), "short"), verifyReq("acme-orders"))
		refusedWith(t, "Verify with a client certificate and a short token", err, codes.Unauthenticated)
		unlisted := e.ca.issue(t, unlistedSubject, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), false)
		_, err = hookverifyv1.NewVerifierServiceClient(e.dialAddr(t, addr, &unlisted)).Verify(t.Context(), verifyReq("acme-orders"))
		refusedWith(t, "Verify with an unlisted certificate", err, codes.PermissionDenied)
	})
	t.Run("health and reflection stay open", func(t *testing.T) {
		healthAndReflectionOpen(t, e.dialAddr(t, addr, nil))
	})
	t.Run("unknown method", func(t *testing.T) {
		// gRPC answers it itself, as before; it is not counted (the metric's method label
		// stays bounded).
		conn := e.dialAddr(t, addr, nil)
		before := authFailureCounts(t, e.metrics)
		err := conn.Invoke(t.Context(), "/hookverify.v1.VerifierService/Nope", &hookverifyv1.VerifyRequest{}, &hookverifyv1.VerifyResponse{})
		refusedWith(t, "unknown method", err, codes.Unimplemented)
		for k, v := range authFailureCounts(t, e.metrics) {
			if v != before[k] || strings.Contains(k.method, "Nope") {
				t.Errorf("auth failures %v moved for an unknown method", k)
			}
		}
	})
}

// TestTapDevModeUnaffected: without authentication (development mode) nothing is refused and
// messages are read as always.
func TestTapDevModeUnaffected(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, kr := mustKeyring(t)
	srv, err := server.New(server.Options{Keyring: kr, Protocols: protocol.Default(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(st)
	rc := newReadCounter()
	g := srv.NewGRPCServer(grpc.StatsHandler(rc))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := hookverifyv1.NewAdminServiceClient(conn).CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
		Endpoint: &hookverifyv1.Endpoint{Id: "dev", Provider: "github"}}); err != nil {
		t.Fatalf("CreateEndpoint without credentials in development mode: %v", err)
	}
	_, err = hookverifyv1.NewVerifierServiceClient(conn).Verify(t.Context(), bigVerifyReq("dev"))
	allowed(t, "Verify without credentials in development mode", err)
	if _, payload := rc.read(hookverifyv1.VerifierService_Verify_FullMethodName); payload < bigBody {
		t.Errorf("read %d bytes of the Verify message, want it all", payload)
	}
}
