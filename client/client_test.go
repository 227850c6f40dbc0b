package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

func dial(t testing.TB, addr string, opts ...client.Option) *client.Conn {
	t.Helper()
	conn, err := client.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestRetries drives the retry policy against a real gRPC server scripted to fail.
func TestRetries(t *testing.T) {
	t.Parallel()
	u, re := codes.Unavailable, codes.ResourceExhausted
	cases := []struct {
		name      string
		method    string
		failures  []codes.Code
		policy    client.RetryPolicy
		wantCalls int
		wantCode  codes.Code
	}{
		{"unavailable three times then success", "Verify", []codes.Code{u, u, u}, fastRetry, 4, codes.OK},
		// Backpressure carries RetryInfo and is retried (TestRetryWaitsForShortRetryInfo);
		// without it, RESOURCE_EXHAUSTED is a message over the receive limit, and the same
		// message can never pass: no retry.
		{"resource exhausted without RetryInfo is not retried", "Verify", []codes.Code{re, u}, fastRetry, 1, re},
		{"gives up after MaxAttempts", "Verify", []codes.Code{u, u, u, u, u, u}, fastRetry, 5, u},
		{"retries off", "Verify", []codes.Code{u}, client.RetryPolicy{MaxAttempts: 1}, 1, u},
		{"invalid argument is not retried", "Verify", []codes.Code{codes.InvalidArgument}, fastRetry, 1, codes.InvalidArgument},
		{"internal is not retried", "Verify", []codes.Code{codes.Internal}, fastRetry, 1, codes.Internal},
		{"admin read is retried", "ListEndpoints", []codes.Code{u, u}, fastRetry, 3, codes.OK},
		{"admin write is not retried", "AddSecret", []codes.Code{u}, fastRetry, 1, u},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeServer()
			f.fail(tc.method, tc.failures...)
			conn := dial(t, f.start(t), client.WithRetry(tc.policy))
			ctx := context.Background()
			var err error
			switch tc.method {
			case "Verify":
				var resp *hookverifyv1.VerifyResponse
				resp, err = conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"})
				if err == nil && resp.GetOperationKey() != "op_fake" {
					t.Errorf("response after retries: %v", resp)
				}
			case "ListEndpoints":
				_, err = conn.Admin.ListEndpoints(ctx, &hookverifyv1.ListEndpointsRequest{})
			case "AddSecret":
				_, err = conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{})
			}
			if got := status.Code(err); got != tc.wantCode {
				t.Errorf("code %v, want %v (err %v)", got, tc.wantCode, err)
			}
			if got := f.count(tc.method); got != tc.wantCalls {
				t.Errorf("%d calls, want %d", got, tc.wantCalls)
			}
		})
	}
}

// TestRetriesCoverEveryReadMethod calls every method of every hookverify service against a
// server that fails each method's first call with UNAVAILABLE: Verify and the reads (Get*,
// List*) are retried, as Dial promises, and nothing else is. A read added to a service without
// being marked idempotent fails here.
func TestRetriesCoverEveryReadMethod(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string]int{}
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		mu.Lock()
		calls[method]++
		first := calls[method] == 1
		mu.Unlock()
		if first {
			return status.Error(codes.Unavailable, "scripted")
		}
		// An empty message decodes as any response.
		return stream.SendMsg(&emptypb.Empty{})
	}))
	// Health SERVING, as a hookverify server reports it: Dial checks it before any call.
	healthpb.RegisterHealthServer(g, health.NewServer())
	conn := dial(t, serveGRPC(t, g), client.WithRetry(fastRetry))

	var methods []string
	protoregistry.GlobalFiles.RangeFilesByPackage("hookverify.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			svc := fd.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				methods = append(methods, "/"+string(svc.FullName())+"/"+string(svc.Methods().Get(j).Name()))
			}
		}
		return true
	})
	if len(methods) < 20 {
		t.Fatalf("found only %d methods: %v", len(methods), methods)
	}
	for _, method := range methods {
		name := method[strings.LastIndex(method, "/")+1:]
		read := name == "Verify" || strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List")
		err := conn.GRPC().Invoke(context.Background(), method, &emptypb.Empty{}, &emptypb.Empty{})
		mu.Lock()
		n := calls[method]
		mu.Unlock()
		if read && (err != nil || n != 2) {
			t.Errorf("%s: %d calls, err %v; a read is retried after UNAVAILABLE", method, n, err)
		}
		if !read && (status.Code(err) != codes.Unavailable || n != 1) {
			t.Errorf("%s: %d calls, err %v; a method that changes state is not retried", method, n, err)
		}
	}
}

// pushbackServer answers every call with code and, when hint > 0, a RetryInfo of hint, until
// it has failed failures times; then it answers with an empty message.
func pushbackServer(t *testing.T, code codes.Code, hint time.Duration, failures int64) (addr string, calls *atomic.Int64) {
	t.Helper()
	var delay *durationpb.Duration
	if hint > 0 {
		delay = durationpb.New(hint)
	}
	return pushbackServerOf(t, code, delay, failures)
}

// pushbackServerOf is pushbackServer with the RetryInfo delay as sent (nil for none), which
// may be one no Duration holds or an invalid one.
func pushbackServerOf(t *testing.T, code codes.Code, delay *durationpb.Duration, failures int64) (addr string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		if calls.Add(1) <= failures {
			st := status.New(code, "scripted")
			if delay != nil {
				st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: delay})
			}
			return st.Err()
		}
		return stream.SendMsg(&emptypb.Empty{})
	}))
	healthpb.RegisterHealthServer(g, health.NewServer())
	return serveGRPC(t, g), calls
}

// TestRetryHonoursServerRetryInfo: the server's backpressure answer (RESOURCE_EXHAUSTED with a
// RetryInfo of 30 s) says when a new event may succeed. The inbox limits are checked against a
// snapshot refreshed every second, so retrying it within the 5 s budget 100 ms later only
// repeats the signature check on a server that is already overloaded, and counts every retry in
// hookverify_backpressure_total as if it were another delivery turned away. The client must
// give the error back at once when the hint does not fit its budget.
func TestRetryHonoursServerRetryInfo(t *testing.T) {
	t.Parallel()
	addr, calls := pushbackServer(t, codes.ResourceExhausted, 30*time.Second, 100)
	conn := dial(t, addr) // the default policy, as hookverify edge uses it
	start := time.Now()
	_, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("err %v, want RESOURCE_EXHAUSTED", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls against a 30 s retry hint, want 1 (the hint does not fit the retry budget)", n)
	}
	// At once, not after waiting out the 5 s budget: the bound leaves a loaded machine room.
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("took %v; the answer should come back at once, not after the retry budget", took)
	}
}

// TestRetryWaitsForShortRetryInfo: a hint that fits the budget is waited out before the retry,
// never undercut by a shorter jittered backoff.
func TestRetryWaitsForShortRetryInfo(t *testing.T) {
	t.Parallel()
	const hint = 300 * time.Millisecond
	addr, calls := pushbackServer(t, codes.ResourceExhausted, hint, 1)
	conn := dial(t, addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxElapsed: 5 * time.Second}))
	start := time.Now()
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	if took := time.Since(start); took < hint {
		t.Errorf("retried after %v, before the server's hint of %v", took, hint)
	}
}

// TestRetryWithoutHintUnchanged: UNAVAILABLE without a hint is still retried with the policy's
// backoff.
func TestRetryWithoutHintUnchanged(t *testing.T) {
	t.Parallel()
	addr, calls := pushbackServer(t, codes.Unavailable, 0, 2)
	conn := dial(t, addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second}))
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
}

// TestRetriesStopInTime shows that a retry never sleeps past the context's deadline or the
// policy's MaxElapsed: with backoffs of ten seconds, the call returns the server's error at
// once instead of waiting.
func TestRetriesStopInTime(t *testing.T) {
	t.Parallel()
	slow := client.RetryPolicy{MaxAttempts: 10, InitialBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second, MaxElapsed: time.Minute}
	t.Run("context deadline", func(t *testing.T) {
		t.Parallel()
		f := newFakeServer()
		f.fail("Verify", codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable)
		conn := dial(t, f.start(t), client.WithRetry(slow))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"})
		if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
			t.Errorf("code %v", c)
		}
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("returned after %v, past the 300 ms deadline", elapsed)
		}
	})
	t.Run("MaxElapsed", func(t *testing.T) {
		t.Parallel()
		f := newFakeServer()
		f.fail("Verify", codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable)
		p := slow
		p.MaxElapsed = 200 * time.Millisecond
		conn := dial(t, f.start(t), client.WithRetry(p))
		start := time.Now()
		_, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("err %v", err)
		}
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("returned after %v, past MaxElapsed", elapsed)
		}
	})
	t.Run("invalid policy", func(t *testing.T) {
		if _, err := client.Dial("127.0.0.1:1", client.WithRetry(client.RetryPolicy{})); err == nil {
			t.Error("Dial accepted MaxAttempts 0")
		}
	})
}

// TestToken checks that the token arrives as authorization metadata on every call, retries
// included, and that Dial refuses to send it in clear beyond loopback.
func TestToken(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	f.fail("Verify", codes.Unavailable)
	conn := dial(t, f.start(t), client.WithToken("hv_tok_123"), client.WithRetry(fastRetry))
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.ListEndpoints(context.Background(), &hookverifyv1.ListEndpointsRequest{}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.metadata) != 3 {
		t.Fatalf("%d calls recorded, want 3", len(f.metadata))
	}
	for i, md := range f.metadata {
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer hv_tok_123" {
			t.Errorf("call %d: authorization %q", i, got)
		}
	}

	for _, addr := range []string{"hooks.example.com:7700", "192.0.2.1:7700", "dns:///verifier.internal:7700"} {
		if _, err := client.Dial(addr, client.WithToken("hv_tok_123")); !errors.Is(err, client.ErrTokenInClear) || !strings.Contains(err.Error(), "TLS") {
			t.Errorf("Dial(%s) with a token and no TLS: %v", addr, err)
		}
	}
	if _, err := client.Dial("127.0.0.1:1", client.WithToken("two words")); err == nil || strings.Contains(err.Error(), "two words") {
		t.Errorf("token with a space: %v", err)
	}
}

// TestTLS dials a mutual-TLS server with WithTLSFiles: the server sees the client certificate,
// the token travels, and a client without a certificate is turned away.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	caFile := filepath.Join(dir, "ca.pem")
	ca.WriteCA(t, caFile)
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "edge", ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}}))
	srvTLS := mutualTLSServerConfig(t, ca)
	f := newFakeServer()
	var seen []string // guarded by f.mu
	f.respond = func(ctx context.Context, _ *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		if p, ok := peer.FromContext(ctx); ok {
			if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
				f.mu.Lock()
				seen = append(seen, info.State.PeerCertificates[0].Subject.CommonName)
				f.mu.Unlock()
			}
		}
		return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED}, nil
	}
	addr := f.start(t, grpc.Creds(credentials.NewTLS(srvTLS)))
	_, port, _ := net.SplitHostPort(addr)

	conn := dial(t, "localhost:"+port, client.WithTLSFiles(caFile, certFile, keyFile), client.WithToken("hv_tok_tls"))
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Fatalf("Verify over mutual TLS: %v", err)
	}
	f.mu.Lock()
	if len(seen) != 1 || seen[0] != "edge" {
		t.Errorf("server saw client certificates %q", seen)
	}
	if got := f.metadata[0].Get("authorization"); len(got) != 1 || got[0] != "Bearer hv_tok_tls" {
		t.Errorf("authorization over TLS: %q", got)
	}
	f.mu.Unlock()

	anonymous := dial(t, "localhost:"+port, client.WithTLSFiles(caFile, "", ""), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if _, err := anonymous.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err == nil {
		t.Error("a client without a certificate got through")
	}
	// With TLS the token may go to any address.
	if _, err := client.Dial("hooks.example.com:443", client.WithTLSFiles(caFile, "", ""), client.WithToken("t")); err != nil {
		t.Errorf("token over TLS to a remote address: %v", err)
	}
	if _, err := client.Dial("localhost:1", client.WithTLSFiles(filepath.Join(dir, "missing.pem"), "", "")); err == nil {
		t.Error("Dial accepted a missing CA file")
	}
	if _, err := client.Dial("localhost:1", client.WithTLSFiles(caFile, certFile, "")); err == nil {
		t.Error("Dial accepted a certificate without its key")
	}
}

// TestTLSFilesFollowRenewal: an edge whose client certificate expired is turned away until the
// renewed one is written to its files; then the same connection gets through, without a
// restart or a new Dial. With WithConnLogger, a renewal caught half written and the reload
// after it are both logged: the first is the only warning before the old certificate expires.
func TestTLSFilesFollowRenewal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	caFile := filepath.Join(dir, "ca.pem")
	ca.WriteCA(t, caFile)
	expired := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	certFile, keyFile := testpki.WriteKeyPair(t, dir, "edge", expired)
	f := newFakeServer()
	addr := f.start(t, grpc.Creds(credentials.NewTLS(mutualTLSServerConfig(t, ca))))
	_, port, _ := net.SplitHostPort(addr)
	var logs syncbuf.Buffer
	conn := dial(t, "localhost:"+port, client.WithTLSFiles(caFile, certFile, keyFile), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}),
		client.WithConnLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err == nil {
		t.Fatal("an expired client certificate got through")
	}
	// A renewal caught between its two files: the new certificate beside the old key.
	renewed := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}})
	halfDir := t.TempDir()
	newCert, _ := testpki.WriteKeyPair(t, halfDir, "edge", renewed)
	if err := os.Rename(newCert, certFile); err != nil {
		t.Fatal(err)
	}
	// The next handshake reads the files: after the connection's backoff, a few seconds at most.
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(logs.String(), "changed but do not load"); time.Sleep(50 * time.Millisecond) {
		if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err == nil {
			t.Fatal("a certificate without its key got through")
		}
		if time.Now().After(deadline) {
			t.Fatalf("a half-written renewal was not logged; logs: %s", logs.String())
		}
	}
	testpki.WriteKeyPair(t, dir, "edge", renewed)
	// The connection reconnects after its backoff (at most a few seconds).
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with the renewed certificate on disk, Verify still fails: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "reloaded the TLS files") {
		t.Fatalf("the reload was not logged; logs: %s", logs.String())
	}
}

// TestZeroInitialBackoffRetriesAtOnce: RetryPolicy sleeps a random time below
// min(MaxBackoff, InitialBackoff·2^(n-1)) before retry n, so an InitialBackoff of zero retries
// at once. It used to sleep up to MaxBackoff instead (the zero was taken for an overflow), which
// within a provider's deadline often meant no retry at all.
func TestZeroInitialBackoffRetriesAtOnce(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	f.fail("Verify", codes.Unavailable, codes.Unavailable)
	conn := dial(t, f.start(t), client.WithRetry(client.RetryPolicy{MaxAttempts: 3, InitialBackoff: 0, MaxBackoff: time.Hour, MaxElapsed: 2 * time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "ep"}); err != nil {
		t.Fatalf("after %v and %d calls: %v; want the retries made at once and the third call answered", time.Since(start), f.count("Verify"), err)
	}
}

// mutualTLSServerConfig is a server's TLS configuration with a certificate for localhost from
// ca, requiring a client certificate from ca.
func mutualTLSServerConfig(t *testing.T, ca *testpki.CA) *tls.Config {
	t.Helper()
	return &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "localhost"}, Server: true})},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

// TestDialBalancesOverServingInstances: a target that resolves to several instances (a DNS
// name) gets its calls spread over those whose health is SERVING, and none sent to one that
// reports NOT_SERVING (starting, or its storage down), which could only answer UNAVAILABLE.
// gRPC's default sent every call to the first address, whatever its health.
func TestDialBalancesOverServingInstances(t *testing.T) {
	t.Parallel()
	notServing, serving := newFakeServer(), newFakeServer()
	var addrs []resolver.Address
	for _, f := range []*fakeServer{notServing, serving, newFakeServer()} {
		g := grpc.NewServer()
		hookverifyv1.RegisterVerifierServiceServer(g, f)
		h := health.NewServer()
		if f == notServing {
			h.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		}
		healthpb.RegisterHealthServer(g, h)
		addrs = append(addrs, resolver.Address{Addr: serveGRPC(t, g)})
	}
	dialAll := func(opts ...client.Option) *client.Conn {
		r := manual.NewBuilderWithScheme("balance")
		r.InitialState(resolver.State{Addresses: addrs})
		return dial(t, "balance:///instances", append(opts, client.WithGRPCOptions(grpc.WithResolvers(r)))...)
	}
	// callUntil calls until reached has had 5 calls, or 5 s have passed: the instances become
	// ready one by one, and round robin uses those ready so far, so the first calls of a new
	// connection need not spread.
	callUntil := func(conn *client.Conn, reached *fakeServer) (calls int) {
		for deadline := time.Now().Add(5 * time.Second); reached.count("Verify") < 5 && time.Now().Before(deadline); calls++ {
			if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		}
		return calls
	}
	calls := callUntil(dialAll(), serving)
	if n := notServing.count("Verify"); n != 0 {
		t.Errorf("the NOT_SERVING instance got %d calls", n)
	}
	if n := serving.count("Verify"); n < 5 {
		t.Errorf("the second SERVING instance got %d of %d calls: they are not balanced", n, calls)
	}

	// WithoutHealthGate (the CLI's one-shot commands, which want the server's own answer):
	// balanced over every instance, the NOT_SERVING one included.
	calls = callUntil(dialAll(client.WithoutHealthGate()), notServing)
	if n := notServing.count("Verify"); n < 5 {
		t.Errorf("without the gate, the NOT_SERVING instance got %d of %d calls", n, calls)
	}
}

// TestDialRefusesWithTLSAndWithTLSFilesTogether: each replaced the other, the last one given
// winning in silence, so WithTLS(&tls.Config{ServerName: ...}) next to WithTLSFiles(ca, cert,
// key) dropped either the server name or the client certificate, and the failure showed only
// later, as a refused handshake. Dial says so at once instead.
func TestDialRefusesWithTLSAndWithTLSFilesTogether(t *testing.T) {
	t.Parallel()
	cfg := &tls.Config{ServerName: "verifier.internal", MinVersion: tls.VersionTLS12}
	for name, opts := range map[string][]client.Option{
		"WithTLS first":      {client.WithTLS(cfg), client.WithTLSFiles("", "", "")},
		"WithTLSFiles first": {client.WithTLSFiles("", "", ""), client.WithTLS(cfg)},
	} {
		conn, err := client.Dial("verifier.internal:7700", opts...)
		if err == nil {
			conn.Close()
			t.Errorf("%s: Dial accepted both", name)
			continue
		}
		if !strings.Contains(err.Error(), "WithTLS") {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, opt := range []client.Option{client.WithTLS(cfg), client.WithTLSFiles("", "", "")} {
		conn, err := client.Dial("verifier.internal:7700", opt)
		if err != nil {
			t.Fatalf("one TLS option: %v", err)
		}
		conn.Close()
	}
}
