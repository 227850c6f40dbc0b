package client_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/ident"
	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// hookverifyServer is a real hookverify server (embedded SQLite) on a loopback port.
type hookverifyServer struct {
	addr  string
	store storage.Store
	stop  func()
}

func startHookverify(t testing.TB, opts ...grpc.ServerOption) *hookverifyServer {
	t.Helper()
	keyring := testpki.Keyring(t)
	srv, err := server.New(server.Options{Keyring: keyring, Protocols: protocol.Default(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(st)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.NewGRPCServer(opts...)
	go g.Serve(lis)
	var once sync.Once
	stop := func() { once.Do(g.Stop) }
	t.Cleanup(func() { stop(); st.Close() })
	return &hookverifyServer{addr: lis.Addr().String(), store: st, stop: stop}
}

// requestFromWire reads raw as net/http's server would, from a client at 192.0.2.1, with its
// body, read whole; ok is false for bytes net/http answers 400 itself.
func requestFromWire(raw []byte) (r *http.Request, body []byte, ok bool) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return nil, nil, false
	}
	if body, err = io.ReadAll(r.Body); err != nil {
		return nil, nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.RemoteAddr = "192.0.2.1:1234"
	return r, body, true
}

// outcomes collects what the handler's observer saw.
type outcomes struct {
	mu  sync.Mutex
	all []client.Outcome
}

func (o *outcomes) observe(_ *http.Request, out client.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all = append(o.all, out)
}

func (o *outcomes) at(i int) client.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all[i]
}

func (o *outcomes) last() client.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all[len(o.all)-1]
}

// TestHandlerAgainstARealServer sends signed Stripe deliveries over HTTP through Handler to a
// real hookverify server and checks each answer, and the stored inbox record.
func TestHandlerAgainstARealServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := startHookverify(t)
	conn := dial(t, hv.addr, client.WithMaxBodyBytes(64<<10),
		client.WithRetry(client.RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxElapsed: time.Second}))

	stripe, _ := protocol.Default().Lookup("stripe")
	signing, verifying, err := stripe.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop-stripe", Provider: "stripe"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: "shop-stripe", Secret: verifying}); err != nil {
		t.Fatal(err)
	}

	var seen outcomes
	var logs syncbuf.Buffer
	mux := http.NewServeMux()
	mux.Handle("/hooks/{endpoint}", client.Handler(conn, client.WithObserver(seen.observe), client.WithRetryAfter(3*time.Second),
		client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil)))))
	edge := httptest.NewServer(mux)
	defer edge.Close()

	sign := func(eventID string, secret string) protocol.Signed {
		t.Helper()
		signed, err := protocol.SignDelivery(stripe, protocol.SignInput{Body: protocol.ExampleBody(stripe, eventID), EventID: eventID, Timestamp: time.Now(), Method: "POST"}, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	post := func(path string, d protocol.Signed, extra ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", edge.URL+path, bytes.NewReader(d.Body))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range d.Headers {
			req.Header.Add(h.Name, h.Value)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			req.Header.Add(extra[i], extra[i+1])
		}
		resp, err := edge.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	delivery := sign("evt_edge_1", signing)
	if resp := post("/hooks/shop-stripe?src=test&a=%2F", delivery, "X-Repeat", "one", "X-Repeat", "two", "X-Repeat", "three"); resp.StatusCode != 200 {
		t.Fatalf("signed delivery: %d", resp.StatusCode)
	}
	first := seen.last()
	if first.Verdict() != hookverifyv1.Verdict_VERDICT_ACCEPTED || first.Code != codes.OK || !first.CalledVerifier {
		t.Fatalf("first outcome %+v", first)
	}

	// The inbox record holds the headers, repeats in order, and the URL the provider called.
	stored, err := hv.store.GetDelivery(ctx, first.Response.GetInboxId())
	if err != nil {
		t.Fatal(err)
	}
	var repeats []string
	for _, h := range stored.Headers {
		if h.Name == "X-Repeat" {
			repeats = append(repeats, h.Value)
		}
	}
	if strings.Join(repeats, ",") != "one,two,three" {
		t.Errorf("stored X-Repeat values %q", repeats)
	}
	if stored.Headers[0].Name != "Host" || stored.Headers[0].Value != strings.TrimPrefix(edge.URL, "http://") {
		t.Errorf("first stored header %+v", stored.Headers[0])
	}
	if want := edge.URL + "/hooks/shop-stripe?src=test&a=%2F"; stored.URL != want {
		t.Errorf("stored URL %q, want %q", stored.URL, want)
	}
	if !bytes.Equal(stored.Body, delivery.Body) {
		t.Error("stored body differs from the body sent")
	}

	cases := []struct {
		name       string
		path       string
		delivery   protocol.Signed
		wantStatus int
		wantReason hookverifyv1.RejectReason
	}{
		{"redelivery", "/hooks/shop-stripe", delivery, 200, 0},
		{"forged", "/hooks/shop-stripe", sign("evt_edge_2", "whsec_"+strings.Repeat("A", 32)), 401, hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH},
		{"unknown endpoint", "/hooks/nope", sign("evt_edge_3", signing), 400, hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT},
		{"oversize body", "/hooks/shop-stripe", protocol.Signed{Body: bytes.Repeat([]byte("x"), 64<<10+1), Headers: delivery.Headers}, 413, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if resp := post(tc.path, tc.delivery); resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := seen.last().Response.GetRejectReason(); got != tc.wantReason {
				t.Errorf("reject reason %v, want %v", got, tc.wantReason)
			}
		})
	}
	dup := seen.at(1)
	if dup.Verdict() != hookverifyv1.Verdict_VERDICT_DUPLICATE || dup.Response.GetOperationKey() != first.Response.GetOperationKey() {
		t.Errorf("redelivery: %v, operation key %q vs %q", dup.Verdict(), dup.Response.GetOperationKey(), first.Response.GetOperationKey())
	}
	if seen.last().CalledVerifier {
		t.Error("the oversize body was forwarded")
	}

	t.Run("verifier down", func(t *testing.T) {
		hv.stop()
		resp := post("/hooks/shop-stripe", sign("evt_edge_4", signing))
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
			t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if got := seen.last().Code; got != codes.Unavailable {
			t.Errorf("code %v", got)
		}
	})
	if strings.Contains(logs.String(), string(delivery.Body)) || strings.Contains(logs.String(), "v1=") {
		t.Errorf("logs contain a body or a signature:\n%s", logs.String())
	}
}

// TestHandlerErrorMapping checks the answer for each kind of verifier failure, using a server
// scripted to fail, and that misconfiguration is logged without request content.
func TestHandlerErrorMapping(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	f.respond = func(ctx context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		switch req.GetEndpointId() {
		case "slow":
			<-ctx.Done()
			return nil, ctx.Err()
		case "handshake":
			return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_HANDSHAKE, Reply: &hookverifyv1.HttpReply{
				Status: 200, Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "text/plain"}, {Name: "X-Challenge", Value: "c1"}}, Body: []byte("challenge-accepted"),
			}}, nil
		case "noreply":
			return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED}, nil
		case "informational":
			// WriteHeader(1xx) sends an informational answer; the body would follow as a 200.
			return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_REJECTED, Reply: &hookverifyv1.HttpReply{Status: 103, Body: []byte("nope")}}, nil
		case "busy", "busy-long":
			delay := 30 * time.Second
			if req.GetEndpointId() == "busy-long" {
				delay = 24 * time.Hour
			}
			st, _ := status.New(codes.ResourceExhausted, "inbox full").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
			return nil, st.Err()
		}
		return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED, Reply: &hookverifyv1.HttpReply{Status: 200}}, nil
	}
	conn := dial(t, f.start(t), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	var logs syncbuf.Buffer
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithVerifyTimeout(200*time.Millisecond),
		client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))

	const secretBody = `{"card":"4242-secret-body"}`
	cases := []struct {
		name       string
		path       string
		fail       codes.Code
		wantStatus int
		wantLog    string // an error log line naming the code, for misconfiguration
	}{
		{"unavailable", "/hooks/e", codes.Unavailable, 503, ""},
		// Without RetryInfo: a message over the server's receive limit (backpressure, with
		// RetryInfo, is "busy" above).
		{"resource exhausted", "/hooks/e", codes.ResourceExhausted, 413, ""},
		{"deadline exceeded", "/hooks/slow", codes.OK, 503, ""},
		{"unauthenticated", "/hooks/e", codes.Unauthenticated, 500, "Unauthenticated"},
		{"permission denied", "/hooks/e", codes.PermissionDenied, 500, "PermissionDenied"},
		{"invalid argument", "/hooks/e", codes.InvalidArgument, 500, "InvalidArgument"},
		{"internal", "/hooks/e", codes.Internal, 500, "Internal"},
		{"unimplemented", "/hooks/e", codes.Unimplemented, 500, "Unimplemented"},
		{"no reply in the answer", "/hooks/noreply", codes.OK, 500, "without a usable reply"},
		{"1xx reply status is not written", "/hooks/informational", codes.OK, 500, "without a usable reply"},
		{"handshake reply written as given", "/hooks/handshake", codes.OK, 200, ""},
		{"no endpoint in the path", "/hooks/", codes.OK, 404, ""},
		{"path beyond the endpoint", "/hooks/a/b", codes.OK, 404, ""},
	}
	// A server's RetryInfo hint (backpressure sends one) becomes the Retry-After, capped.
	for path, want := range map[string]string{"/hooks/busy": "30", "/hooks/busy-long": "300"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader("{}")))
		if w.Code != 503 || w.Header().Get("Retry-After") != want {
			t.Errorf("%s: status %d, Retry-After %q; want 503, %s", path, w.Code, w.Header().Get("Retry-After"), want)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail != codes.OK {
				f.fail("Verify", tc.fail)
			}
			before := len(logs.String())
			r := httptest.NewRequest("POST", tc.path, strings.NewReader(secretBody))
			r.Header.Set("Stripe-Signature", "t=1,v1=deadbeefsignature")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %s", w.Code, tc.wantStatus, w.Body)
			}
			if tc.wantStatus == 503 && w.Header().Get("Retry-After") != "10" {
				t.Errorf("Retry-After %q", w.Header().Get("Retry-After"))
			}
			logged := logs.String()[before:]
			if tc.wantLog != "" && (!strings.Contains(logged, `"level":"ERROR"`) || !strings.Contains(logged, tc.wantLog)) {
				t.Errorf("log lacks an error line with %q:\n%s", tc.wantLog, logged)
			}
			if tc.wantLog == "" && strings.Contains(logged, `"level":"ERROR"`) {
				t.Errorf("unexpected error log:\n%s", logged)
			}
			if tc.name == "handshake reply written as given" {
				if w.Body.String() != "challenge-accepted" || w.Header().Get("X-Challenge") != "c1" || w.Header().Get("Content-Type") != "text/plain" {
					t.Errorf("handshake reply: %v %q", w.Header(), w.Body)
				}
			}
		})
	}
	if out := logs.String(); strings.Contains(out, "4242-secret-body") || strings.Contains(out, "deadbeefsignature") {
		t.Errorf("logs contain a body or a signature:\n%s", out)
	}
}

// TestRetryAfterALostAnswer makes the real server commit the first Verify but lose its answer
// (UNAVAILABLE, as a dropped connection would look): the client's retry is answered DUPLICATE
// with the operation key of the committed delivery, so the retry cannot cause a second ACCEPTED.
func TestRetryAfterALostAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var committed []*hookverifyv1.VerifyResponse
	loseFirstAnswer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if v, ok := resp.(*hookverifyv1.VerifyResponse); ok && err == nil {
			mu.Lock()
			defer mu.Unlock()
			committed = append(committed, v)
			if len(committed) == 1 {
				return nil, status.Error(codes.Unavailable, "answer lost")
			}
		}
		return resp, err
	}
	hv := startHookverify(t, grpc.ChainUnaryInterceptor(loseFirstAnswer))
	conn := dial(t, hv.addr, client.WithRetry(fastRetry))
	stripe, _ := protocol.Default().Lookup("stripe")
	signing, verifying, err := stripe.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "lost", Provider: "stripe"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: "lost", Secret: verifying}); err != nil {
		t.Fatal(err)
	}
	signed, err := protocol.SignDelivery(stripe, protocol.SignInput{Body: protocol.ExampleBody(stripe, "evt_lost_1"), EventID: "evt_lost_1", Timestamp: time.Now(), Method: "POST"}, []string{signing})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "http://hooks.example.com/hooks/lost", bytes.NewReader(signed.Body))
	for _, h := range signed.Headers {
		r.Header.Add(h.Name, h.Value)
	}
	resp, err := conn.Verify(ctx, "lost", r)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(committed) != 2 || committed[0].GetVerdict() != hookverifyv1.Verdict_VERDICT_ACCEPTED {
		t.Fatalf("server answers %v", committed)
	}
	if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_DUPLICATE || resp.GetOperationKey() != committed[0].GetOperationKey() || resp.GetInboxId() != committed[0].GetInboxId() {
		t.Errorf("retry answered %v, key %q inbox %q; the lost answer had key %q inbox %q",
			resp.GetVerdict(), resp.GetOperationKey(), resp.GetInboxId(), committed[0].GetOperationKey(), committed[0].GetInboxId())
	}
	if n, err := hv.store.CountDeliveries(ctx, ""); err != nil || n != 1 {
		t.Errorf("%d inbox records (%v), want 1", n, err)
	}
}

// stalledUpload sends srv a request that promises 100 bytes of body, sends 10 and stalls, and
// returns the answer, failing the test if there is none within 3 s.
func stalledUpload(t *testing.T, srv *httptest.Server) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // before the test's srv.Close, which waits for the handler
	io.WriteString(c, "POST /hooks/ep HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Length: 100\r\n\r\n0123456789")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within 3 s to a stalled upload: %v", err)
	}
	resp.Body.Close()
	return resp
}

// TestHandlerAnswersBodyReadTimeoutWith503: a body still arriving when the server's ReadTimeout
// expires is a transient failure, answered 503 with Retry-After: many providers never retry a
// 4xx, so a 400 would drop a delivery that was merely slow.
func TestHandlerAnswersBodyReadTimeoutWith503(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn := dial(t, f.start(t))
	srv := httptest.NewUnstartedServer(client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler))))
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	defer srv.Close()
	resp := stalledUpload(t, srv)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "10" {
		t.Errorf("body read timed out: status %d, Retry-After %q; want 503, 10", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("a truncated body reached the verifier (%d calls)", n)
	}
}

// TestVerifyTimeoutBoundsTheBodyRead: WithVerifyTimeout counts from the handler's start, so a
// body that never comes is answered 503 when it expires, even on a server without ReadTimeout.
func TestVerifyTimeoutBoundsTheBodyRead(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn := dial(t, f.start(t))
	srv := httptest.NewServer(client.Handler(conn, client.EndpointFromPath("/hooks/"),
		client.WithVerifyTimeout(200*time.Millisecond), client.WithLogger(slog.New(slog.DiscardHandler))))
	defer srv.Close()
	start := time.Now()
	resp := stalledUpload(t, srv)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("status %d after %v, want 503", resp.StatusCode, time.Since(start))
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("a truncated body reached the verifier (%d calls)", n)
	}
}

// TestBodyLimitStopsAtTheServerCeiling: Dial refuses a body limit above what the server can
// ever accept (math.MaxInt64 included, which once overflowed into forwarding every body
// empty), so a body over the ceiling is answered 413, never 503 for a provider to retry
// forever; a body at the ceiling does reach the server.
func TestBodyLimitStopsAtTheServerCeiling(t *testing.T) {
	t.Parallel()
	if client.MaxMethodBytes != server.MaxMethodBytes {
		t.Fatalf("client method limit %d, the server's %d", client.MaxMethodBytes, server.MaxMethodBytes)
	}
	if client.MaxHeaderCount != server.MaxHeaderCount || client.MaxHeaderBytes != server.MaxHeaderBytes || client.MaxURLBytes != server.MaxURLBytes {
		t.Fatalf("client header and URL limits %d, %d, %d; the server's are %d, %d, %d", client.MaxHeaderCount, client.MaxHeaderBytes,
			client.MaxURLBytes, server.MaxHeaderCount, server.MaxHeaderBytes, server.MaxURLBytes)
	}
	if client.MaxBodyCeiling != server.MaxBodyCeiling || client.DefaultMaxBodyBytes != server.MaxBodyCeiling {
		t.Fatalf("client ceiling %d, default %d; the server's ceiling is %d", client.MaxBodyCeiling, client.DefaultMaxBodyBytes, server.MaxBodyCeiling)
	}
	for _, n := range []int64{server.MaxBodyCeiling + 1, 64 << 20, math.MaxInt64, 0, -1} {
		if conn, err := client.Dial("127.0.0.1:1", client.WithMaxBodyBytes(n)); err == nil {
			conn.Close()
			t.Errorf("Dial accepted WithMaxBodyBytes(%d)", n)
		}
	}

	hv := startHookverify(t)
	conn := dial(t, hv.addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if _, err := conn.Admin.CreateEndpoint(context.Background(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "big", Provider: "stripe", MaxBodyBytes: server.MaxBodyCeiling}}); err != nil {
		t.Fatal(err)
	}
	var seen outcomes
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithObserver(seen.observe), client.WithLogger(slog.New(slog.DiscardHandler)))
	for _, tc := range []struct {
		size       int
		wantCalled bool
	}{{server.MaxBodyCeiling, true}, {server.MaxBodyCeiling + 1, false}, {33 << 20, false}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/hooks/big", bytes.NewReader(make([]byte, tc.size))))
		o := seen.last()
		if o.CalledVerifier != tc.wantCalled || tc.wantCalled && o.Code != codes.OK || !tc.wantCalled && w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("%d-byte body: status %d, verifier called %v (%v); want called %v, or 413", tc.size, w.Code, o.CalledVerifier, o.Code, tc.wantCalled)
		}
	}
}

// TestHandlerAnswersImpossibleEndpointIDsWith404: an id from the URL that no endpoint can have
// is an unknown endpoint like any other, answered 404 without calling the server and without
// an error log. The ids the server refuses to create are exactly those.
func TestHandlerAnswersImpossibleEndpointIDsWith404(t *testing.T) {
	t.Parallel()
	hv := startHookverify(t)
	conn := dial(t, hv.addr)
	var logs syncbuf.Buffer
	var seen outcomes
	h := client.Handler(conn, client.EndpointFromPathValue("endpoint"), client.WithObserver(seen.observe),
		client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	mux := http.NewServeMux()
	mux.Handle("/hooks/{endpoint}", h)
	for _, tc := range []struct {
		id       string
		possible bool
	}{
		{"shop-stripe_v1.2", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"bad id", false},
		{"ünïcode", false},
		{"a:b", false},
		{"a%2Fb", false},
	} {
		_, err := conn.Admin.CreateEndpoint(context.Background(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: tc.id, Provider: "stripe"}})
		if (err == nil) != tc.possible {
			t.Fatalf("CreateEndpoint(%q): %v; the test expects it possible: %v", tc.id, err, tc.possible)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("POST", "/hooks/"+url.PathEscape(tc.id), strings.NewReader("{}")))
		o := seen.last()
		if o.EndpointID != tc.id {
			t.Fatalf("the handler saw endpoint %q, want %q", o.EndpointID, tc.id)
		}
		if !tc.possible && (w.Code != http.StatusNotFound || o.CalledVerifier) {
			t.Errorf("endpoint id %q: status %d, verifier called %v; want 404 without a call", tc.id, w.Code, o.CalledVerifier)
		}
		if tc.possible && !o.CalledVerifier {
			t.Errorf("endpoint id %q that exists: not forwarded (status %d)", tc.id, w.Code)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("a request for an unknown endpoint logged an error:\n%s", logs.String())
	}
}

// FuzzHandlerHTTPRequest feeds the edge handler whole HTTP/1.1 requests as a provider (or
// anyone) could send them, parsed by net/http as the edge's server parses them, behind the
// "/hooks/{endpoint}" route the edge command registers. Properties: no panic; an endpoint id
// no endpoint can have is answered 404 without calling the verifier; a forwarded request
// carries the body byte for byte and the endpoint id from the path; the provider gets the
// verifier's reply status.
func FuzzHandlerHTTPRequest(f *testing.F) {
	fake := newFakeServer()
	var mu sync.Mutex
	var last *hookverifyv1.VerifyRequest
	fake.respond = func(_ context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		mu.Lock()
		last = req
		mu.Unlock()
		return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_REJECTED,
			Reply: &hookverifyv1.HttpReply{Status: 401, Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{}`)}}, nil
	}
	conn := dial(f, fake.start(f), client.WithMaxBodyBytes(1<<12))
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/{endpoint}", client.Handler(conn, client.WithLogger(slog.New(slog.DiscardHandler))))

	f.Add([]byte("POST /hooks/shop-stripe?x=1 HTTP/1.1\r\nHost: hooks.example.com\r\nStripe-Signature: t=1,v1=ab\r\nContent-Length: 14\r\n\r\n{\"id\":\"evt_1\"}"))
	f.Add([]byte("POST /hooks/a%2Fb HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Add([]byte("POST /hooks/%zz HTTP/1.1\r\nHost: h\r\nX-A: \xff\r\n\r\n"))
	f.Add([]byte("POST http://other.example/hooks/ep HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("POST /hooks/ep HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n" + strings.Repeat("x", 5000)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, body, ok := requestFromWire(raw)
		if !ok {
			return // net/http answers 400 itself
		}
		mu.Lock()
		last = nil
		mu.Unlock()
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		mu.Lock()
		got := last
		mu.Unlock()
		if w.Code < 200 || w.Code > 599 {
			t.Fatalf("status %d", w.Code)
		}
		if got == nil {
			return // not routed (404/405 of the mux), refused by the handler, or not forwardable
		}
		if !ident.Valid(got.GetEndpointId()) {
			t.Fatalf("forwarded endpoint id %q", got.GetEndpointId())
		}
		if r.PathValue("endpoint") != "" && got.GetEndpointId() != r.PathValue("endpoint") {
			t.Fatalf("endpoint %q forwarded as %q", r.PathValue("endpoint"), got.GetEndpointId())
		}
		if !bytes.Equal(got.GetBody(), body) {
			t.Fatalf("body %q forwarded as %q", body, got.GetBody())
		}
		if !utf8.ValidString(got.GetUrl()) || got.GetMethod() != r.Method {
			t.Fatalf("forwarded %q %q for %q %q", got.GetMethod(), got.GetUrl(), r.Method, r.RequestURI)
		}
		if w.Code != 401 {
			t.Fatalf("verifier replied 401, provider got %d", w.Code)
		}
	})
}

// TestRetryAfterIsAlwaysAValidDelay: Retry-After's delay-seconds are digits only (RFC 9110
// 10.2.3), so a configured Retry-After of zero or below must not come out as "0" (retry at
// once, against a server that just said it is down) or "-5" (which providers cannot parse). Like
// the server's hint, the configured value is sent as at least 1 s, on every 503.
func TestRetryAfterIsAlwaysAValidDelay(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn := dial(t, f.start(t), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	for _, tc := range []struct {
		configured time.Duration
		want       string
	}{{-5 * time.Second, "1"}, {0, "1"}, {300 * time.Millisecond, "1"}, {1500 * time.Millisecond, "2"}, {10 * time.Second, "10"}} {
		h := client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithRetryAfter(tc.configured),
			client.WithLogger(slog.New(slog.DiscardHandler)))
		f.fail("Verify", codes.Unavailable)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}")))
		got := w.Header().Get("Retry-After")
		if n, err := strconv.Atoi(got); w.Code != 503 || err != nil || n < 1 || got != tc.want {
			t.Errorf("WithRetryAfter(%v): status %d, Retry-After %q; want 503, %s", tc.configured, w.Code, got, tc.want)
		}
	}
}

// TestHandlerRefusesABodyReadBeforeIt: a middleware in front of the handler that read the
// body without putting it back (r.FormValue on a form-encoded delivery, as Slack slash commands,
// Twilio and GitHub's form content type send; a peek at the first bytes) leaves the handler
// an empty or truncated body. Forwarded, it fails its signature check: the provider hears a
// 401, which most never retry, for a delivery that was genuine, and the server counts a
// forgery. The handler must see that the body is not the one received (fewer bytes than
// Content-Length, or a body already closed) and answer as for any other edge
// misconfiguration: 500 and an error log, without a call.
func TestHandlerRefusesABodyReadBeforeIt(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn := dial(t, f.start(t))
	var logs syncbuf.Buffer
	var seen outcomes
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithObserver(seen.observe),
		client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	middlewares := map[string]func(r *http.Request){
		"FormValue":    func(r *http.Request) { _ = r.FormValue("command") },
		"peek":         func(r *http.Request) { _, _ = r.Body.Read(make([]byte, 4)) },
		"read, closed": func(r *http.Request) { _, _ = io.ReadAll(r.Body); r.Body.Close() },
	}
	for name, mw := range middlewares {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mw(r)
				h.ServeHTTP(w, r)
			}))
			defer srv.Close()
			before := f.count("Verify")
			resp, err := http.Post(srv.URL+"/hooks/ep", "application/x-www-form-urlencoded",
				strings.NewReader("token=x&team_id=T1&command=%2Fweather&text=94070"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n := f.count("Verify") - before; n != 0 {
				t.Errorf("a body the middleware had read was forwarded (%d calls)", n)
			}
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("status %d, want 500", resp.StatusCode)
			}
			if o := seen.last(); o.Err == nil {
				t.Errorf("outcome without an error: %+v", o)
			}
		})
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || strings.Contains(logs.String(), "94070") {
		t.Errorf("want an error log line without the body:\n%s", logs.String())
	}
	// A middleware that reads the body and puts it back is fine.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/hooks/ep", "application/json", strings.NewReader(`{"id":"evt_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("restored body: status %d", resp.StatusCode)
	}
}

// TestHandlerReplyHeadersReplaceTheRouters: the server's reply goes back "as it is". A router
// middleware that sets a header on every answer (chi's middleware.SetHeader("Content-Type",
// "application/json"), say) must not add a second value to a header the reply sets: Dropbox's
// challenge must be echoed as text/plain, not as two content types.
func TestHandlerReplyHeadersReplaceTheRouters(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	f.respond = func(_ context.Context, _ *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_HANDSHAKE, Reply: &hookverifyv1.HttpReply{
			Status: 200, Body: []byte("c1"), Headers: []*hookverifyv1.HeaderField{
				{Name: "Content-Type", Value: "text/plain"}, {Name: "X-Content-Type-Options", Value: "nosniff"},
				{Name: "X-Repeat", Value: "a"}, {Name: "X-Repeat", Value: "b"}}}}, nil
	}
	conn := dial(t, f.start(t))
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"))
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json") // set by a middleware before the handler
	w.Header().Set("X-Request-Id", "r1")
	h.ServeHTTP(w, httptest.NewRequest("GET", "/hooks/ep?challenge=c1", nil))
	got := w.Result().Header
	if ct := got.Values("Content-Type"); len(ct) != 1 || ct[0] != "text/plain" {
		t.Errorf("Content-Type %q, want just the reply's text/plain", ct)
	}
	if r := got.Values("X-Repeat"); strings.Join(r, ",") != "a,b" {
		t.Errorf("repeated reply header %q", r)
	}
	if got.Get("X-Request-Id") != "r1" || got.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", got)
	}
}

// TestConnHasAStubForEachService: Conn promises a stub for each service, so that a worker
// uses the inbox through the same token and retry policy as the rest.
func TestConnHasAStubForEachService(t *testing.T) {
	t.Parallel()
	fields := map[string]bool{}
	ct := reflect.TypeOf(client.Conn{})
	for i := range ct.NumField() {
		if ct.Field(i).IsExported() {
			fields[ct.Field(i).Type.Name()] = true
		}
	}
	protoregistry.GlobalFiles.RangeFilesByPackage("hookverify.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			if name := string(fd.Services().Get(i).Name()) + "Client"; !fields[name] {
				t.Errorf("Conn has no %s stub", name)
			}
		}
		return true
	})
}

// TestHandlerLogsACanceledCallTheProviderDidNotCancel: CANCELLED is left out of the log only
// because it usually means the provider hung up and nobody reads the answer. A call canceled
// otherwise (the Conn closed while the HTTP server still serves, on a reload or a shutdown in
// the wrong order) turns every delivery away with a 503, and must say so in the log.
func TestHandlerLogsACanceledCallTheProviderDidNotCancel(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn, err := client.Dial(f.start(t))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	conn.Close()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}")))
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", w.Code)
	}
	if !strings.Contains(logs.String(), "Canceled") {
		t.Errorf("a call on a closed connection left no log line:\n%s", logs.String())
	}
	// The provider hanging up is still not logged.
	before := len(logs.String())
	f2 := newFakeServer()
	f2.respond = func(ctx context.Context, _ *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	h2 := client.Handler(dial(t, f2.start(t)), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}")).WithContext(ctx)
	go func() {
		for f2.count("Verify") == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	h2.ServeHTTP(httptest.NewRecorder(), r)
	if logged := logs.String()[before:]; logged != "" {
		t.Errorf("the provider hanging up was logged:\n%s", logged)
	}
}
