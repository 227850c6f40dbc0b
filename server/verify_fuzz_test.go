package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// fuzzServer is a server on a SQLite file for a fuzz target, shared by its inputs.
type fuzzServer struct {
	srv      *server.Server
	store    storage.Store
	logs     *syncbuf.Buffer
	admin    hookverifyv1.AdminServiceClient
	verifier hookverifyv1.VerifierServiceClient
	inbox    hookverifyv1.InboxServiceClient
}

func newFuzzServer(f *testing.F) *fuzzServer {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	_, kr := mustKeyring(f)
	logs := &syncbuf.Buffer{}
	clk := &clock{now: epoch}
	srv, err := server.New(server.Options{
		Keyring:   kr,
		Protocols: protocol.Default(),
		Logger:    slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:       clk.Now,
	})
	if err != nil {
		f.Fatal(err)
	}
	srv.SetStore(st)
	g := srv.NewGRPCServer()
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	f.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///hookverify",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)),
	)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = conn.Close() })
	return &fuzzServer{srv: srv, store: st, logs: logs, admin: hookverifyv1.NewAdminServiceClient(conn), verifier: hookverifyv1.NewVerifierServiceClient(conn),
		inbox: hookverifyv1.NewInboxServiceClient(conn)}
}

// fuzzEndpoint is one endpoint of FuzzVerifyRPC's server, with the secret it was given.
type fuzzEndpoint struct {
	id, provider, secret string
	options              map[string]string
	// signing is what Sign takes when it is not secret (an asymmetric protocol's private key).
	signing string
}

// FuzzVerifyRPC drives whole VerifyRequests, as an edge's caller shapes them (endpoint id,
// method, URL, headers, body), through the gRPC server on SQLite: the request checks, the
// endpoint lookup, public_url, every parser of the protocol, the event id checks, the
// redaction of credentials and the claim. The protocol targets fuzz each parser alone; this one
// holds the server's promises over all of them. Properties, for unsigned and freshly signed
// deliveries alike:
//   - every request gets a verdict whose HTTP reply fits it, or INVALID_ARGUMENT (a malformed
//     request from the edge); never another error, a panic or a hang;
//   - neither the answer nor the server's log ever holds an endpoint's secret;
//   - a REJECTED or HANDSHAKE delivery stores nothing; an ACCEPTED one stores exactly one
//     delivery: the request's method, body and headers (credential headers redacted), and no
//     endpoint secret anywhere in its URL or headers;
//   - the same request again is a DUPLICATE with the same operation key and inbox id, and
//     stores nothing more.
func FuzzVerifyRPC(f *testing.F) {
	ctx := context.Background()
	fs := newFuzzServer(f)
	st, logs, admin, verifier := fs.store, fs.logs, fs.admin, fs.verifier

	endpoints := []fuzzEndpoint{
		{id: "fz-stripe", provider: "stripe", secret: "whsec_FuzzStripeSecretQ8r2Lw0pXv"},
		{id: "fz-github", provider: "github", secret: "FuzzGithubSecretVb71Kq0Zr4Yw"},
		{id: "fz-mailchimp", provider: "mailchimp", secret: "FuzzMailchimpSecretHt5Gm2Ns"},
		{id: "fz-mailchimp-public", provider: "mailchimp", secret: "FuzzMailchimpPublicSecretRe8Dy",
			options: map[string]string{"public_url": "https://public.example.com/mc", "query_param": "key"}},
		{id: "fz-token", provider: "shared-token", secret: "FuzzSharedTokenSecretPw3Jc9Tu",
			options: map[string]string{"id_header": "X-Event-Id"}},
		{id: "fz-twilio", provider: "twilio", secret: "0123456789abcdef0123456789abcdef",
			options: map[string]string{"public_url": "https://public.example.com/tw"}},
		{id: "fz-standard", provider: "standard-webhooks", secret: "whsec_RnV6elN0YW5kYXJkU2VjcmV0MDEyMzQ1Njc4OTA="},
	}
	// Then every built-in protocol with its example secret, without options: those that need
	// some are left out (the ones above cover options).
	for _, p := range protocol.Builtin() {
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			f.Fatalf("%s: ExampleSecret: %v", p.Name, err)
		}
		endpoints = append(endpoints, fuzzEndpoint{id: "fz-all-" + p.Name, provider: p.Name, secret: verifying, signing: signing})
	}
	var secrets []string
	var usable []fuzzEndpoint
	for _, e := range endpoints {
		if _, err := admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: e.id, Provider: e.provider, Options: e.options}}); err != nil {
			if strings.HasPrefix(e.id, "fz-all-") {
				continue
			}
			f.Fatalf("CreateEndpoint(%s): %v", e.id, err)
		}
		if _, err := admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: e.id, Secret: e.secret}); err != nil {
			f.Fatalf("AddSecret(%s): %v", e.id, err)
		}
		if e.signing == "" {
			e.signing = e.secret
		}
		usable = append(usable, e)
		// A shared secret may travel in several forms (Standard Webhooks' base64, Basic
		// credentials); each must stay out. An asymmetric protocol's verifying key is public.
		if e.signing == e.secret {
			for _, form := range []string{e.secret, strings.TrimPrefix(e.secret, "whsec_"), base64.StdEncoding.EncodeToString([]byte(e.secret))} {
				if len(form) >= 12 {
					secrets = append(secrets, form)
				}
			}
		}
	}
	endpoints = usable
	leaks := func(b []byte) string {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				return s
			}
		}
		return ""
	}

	for i := range endpoints {
		f.Add(uint8(i), true, "", "evt_seed_1", "POST", "https://hooks.example.com/in?x=1", []byte(nil), "X-Extra", "v")
	}
	f.Add(uint8(2), true, "", "a", "POST", "https://hooks.example.com/mc?secret=x#f", []byte("type=subscribe"), "secret", "x")
	f.Add(uint8(2), false, "", "", "POST", "https://hooks.example.com/mc?s%65cret=x&secret=y", []byte("type=subscribe"), "", "")
	f.Add(uint8(3), true, "", "b", "post", "HTTP://h:1/mc#?key=1", []byte("x"), "X-Webhook-Token", "")
	f.Add(uint8(4), true, "", "\x00", "PUT", "https://h/%zz?\x7f", []byte("{}"), "x-event-id", "\xff")
	f.Add(uint8(0), false, "fz-STRIPE", "", "GET", "https://h", []byte(`{"id":"evt_1"}`), "Stripe-Signature", "t=1,v1=00")
	f.Add(uint8(5), true, "", strings.Repeat("e", 600), "POST", "https://h/tw?b=2&a=1", []byte("a=1&b=2"), "Content-Type", "application/x-www-form-urlencoded")
	f.Add(uint8(6), false, "../fz-standard", "", "", "/relative", []byte(nil), "", "")
	f.Fuzz(func(t *testing.T, which uint8, signed bool, endpointID, eventID, method, rawURL string, body []byte, extraName, extraValue string) {
		// A call that hangs fails the input rather than stalling the fuzzer.
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		e := endpoints[int(which)%len(endpoints)]
		req := &hookverifyv1.VerifyRequest{EndpointId: e.id, Method: method, Url: rawURL, Body: body}
		if endpointID != "" {
			req.EndpointId = endpointID
		}
		if signed {
			p, _ := protocol.Default().Lookup(e.provider)
			if body == nil {
				body = protocol.ExampleBody(p, eventID)
			}
			in := protocol.SignInput{Body: body, EventID: eventID, Timestamp: epoch, Method: method, URL: rawURL, Options: e.options}
			public, signsPublic := e.options[server.PublicURLOption]
			if signsPublic && e.provider == "twilio" {
				// Behind a proxy the provider signed the public URL, with the query the edge
				// forwards.
				in.URL = public
				if i := strings.IndexByte(rawURL, '?'); i >= 0 {
					in.URL += rawURL[i:]
				}
			}
			d, err := protocol.SignDelivery(p, in, []string{e.signing})
			if err != nil {
				return // Sign cannot make this delivery (a URL it cannot parse, ...)
			}
			req.Body = d.Body
			if !signsPublic || e.provider != "twilio" {
				req.Url = d.URL
			}
			for _, h := range d.Headers {
				req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
			}
		}
		if extraName != "" || extraValue != "" {
			req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: extraName, Value: extraValue})
		}
		// Proto strings are UTF-8: the client refuses to send others (and the server's codec
		// answers them INVALID_ARGUMENT, FuzzUTF8ReportingCodec).
		if !validStrings(req) {
			return
		}
		before := countAll(t, st)
		logsBefore := len(logs.Bytes())

		resp, err := verifier.Verify(ctx, req)
		if err != nil {
			checkVerifyError(t, req, err, leaks)
			if n := countAll(t, st); n != before {
				t.Fatalf("an error (%v) stored %d deliveries", err, n-before)
			}
			return
		}
		checkReply(t, resp)
		if t.Failed() {
			t.FailNow()
		}
		line, _ := protojson.Marshal(resp)
		if s := leaks(line); s != "" {
			t.Fatalf("the answer holds the secret %q: %s", s, line)
		}
		if s := leaks(logs.Bytes()[logsBefore:]); s != "" {
			t.Fatalf("the log holds the secret %q", s)
		}
		after := countAll(t, st)
		switch resp.GetVerdict() {
		case hookverifyv1.Verdict_VERDICT_ACCEPTED:
			if after != before+1 {
				t.Fatalf("ACCEPTED stored %d deliveries, want 1", after-before)
			}
			checkStored(t, st, req, resp, leaks)
			again, err := verifier.Verify(ctx, req)
			if err != nil {
				t.Fatalf("the same delivery again: %v", err)
			}
			if again.GetVerdict() != hookverifyv1.Verdict_VERDICT_DUPLICATE || again.GetOperationKey() != resp.GetOperationKey() ||
				again.GetInboxId() != resp.GetInboxId() || again.GetEventId() != resp.GetEventId() {
				t.Fatalf("the same delivery again: %v, first %v", again, resp)
			}
			if n := countAll(t, st); n != after {
				t.Fatalf("a DUPLICATE stored %d deliveries", n-after)
			}
		case hookverifyv1.Verdict_VERDICT_DUPLICATE:
			if after != before {
				t.Fatalf("DUPLICATE stored %d deliveries", after-before)
			}
		default:
			if after != before {
				t.Fatalf("%s stored %d deliveries", resp.GetVerdict(), after-before)
			}
		}
	})
}

func validStrings(req *hookverifyv1.VerifyRequest) bool {
	ok := utf8.ValidString(req.GetEndpointId()) && utf8.ValidString(req.GetMethod()) && utf8.ValidString(req.GetUrl())
	for _, h := range req.GetHeaders() {
		ok = ok && utf8.ValidString(h.GetName()) && utf8.ValidString(h.GetValue())
	}
	return ok
}

func countAll(t *testing.T, st storage.Store) int64 {
	t.Helper()
	n, err := st.CountDeliveries(context.Background(), "")
	if err != nil {
		t.Fatalf("CountDeliveries: %v", err)
	}
	return n
}

// checkVerifyError allows only the errors an edge's malformed request earns.
func checkVerifyError(t *testing.T, req *hookverifyv1.VerifyRequest, err error, leaks func([]byte) string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("Verify(endpoint %q, method %q, url %q, %d headers, %d body bytes): %v, want a verdict or INVALID_ARGUMENT",
			req.GetEndpointId(), req.GetMethod(), req.GetUrl(), len(req.GetHeaders()), len(req.GetBody()), err)
	}
	if s := leaks([]byte(st.Message())); s != "" {
		t.Fatalf("the error holds the secret %q: %v", s, err)
	}
}

// checkStored compares the stored delivery of an accepted request with the request.
func checkStored(t *testing.T, st storage.Store, req *hookverifyv1.VerifyRequest, resp *hookverifyv1.VerifyResponse, leaks func([]byte) string) {
	t.Helper()
	d, err := st.GetDelivery(context.Background(), resp.GetInboxId())
	if err != nil {
		t.Fatalf("GetDelivery(%s): %v", resp.GetInboxId(), err)
	}
	if d.Method != req.GetMethod() || !bytes.Equal(d.Body, req.GetBody()) || d.EventID != resp.GetEventId() || len(d.Headers) != len(req.GetHeaders()) {
		t.Fatalf("stored %+v for request %v", d, req)
	}
	for i, h := range d.Headers {
		if h.Name != req.GetHeaders()[i].GetName() || (h.Value != req.GetHeaders()[i].GetValue() && h.Value != server.Redacted) {
			t.Fatalf("stored header %d is %q: %q, the request's %q: %q", i, h.Name, h.Value, req.GetHeaders()[i].GetName(), req.GetHeaders()[i].GetValue())
		}
	}
	var stored bytes.Buffer
	stored.WriteString(d.URL)
	for _, h := range d.Headers {
		stored.WriteString("\n" + h.Name + ": " + h.Value)
	}
	if s := leaks(stored.Bytes()); s != "" {
		t.Fatalf("the stored delivery holds the secret %q: %s", s, stored.Bytes())
	}
}

// FuzzEndpointOptions: endpoint options come from admin callers and travel through the
// server's checks (public_url, each protocol's ValidateOptions), the credential digests and the
// store's encoding, and back. Properties, for every protocol and any two options:
//   - CreateEndpoint answers the endpoint or INVALID_ARGUMENT, never another error;
//   - an accepted option holds no NUL, which PostgreSQL's JSONB cannot store: this SQLite
//     server must answer as that one does;
//   - an option that is not a credential comes back as given, from CreateEndpoint, GetEndpoint
//     and ListEndpoints alike; a credential option comes back as a digest, never as given, and
//     neither its value nor any part of it shows in an answer, an error or the log;
//   - the endpoint as read, written back unchanged (UpdateEndpoint, the read-modify-write of
//     every admin tool), is accepted and keeps exactly its options.
func FuzzEndpointOptions(f *testing.F) {
	ctx := context.Background()
	fs := newFuzzServer(f)
	provs := protocol.Builtin()
	for i, p := range provs {
		f.Add(uint8(i), "public_url", "https://public.example.com/in", "", "")
		for _, name := range p.CredentialOptions {
			f.Add(uint8(i), name, "FuzzCredentialOption1", "", "")
		}
	}
	f.Add(uint8(0), "header", "X-Token", "id_pointer", "/data/id")
	f.Add(uint8(1), "template", "{timestamp}.{body}", "encoding", "base64")
	f.Add(uint8(2), "public_url", "https://h/p#?x", "query_param", "k")
	f.Add(uint8(3), "\x00", "", "k", "\u2028")
	for i, p := range provs {
		if p.Name == "generic-hmac" {
			f.Add(uint8(i), "header", "X-Sig", "prefix", "v1\x00") // found: SQLite stored it, PostgreSQL refused it
		}
	}
	var next atomic.Int64
	f.Fuzz(func(t *testing.T, which uint8, k1, v1, k2, v2 string) {
		// A call that hangs fails the input rather than stalling the fuzzer.
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		p := provs[int(which)%len(provs)]
		opts := map[string]string{}
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}} {
			if kv[0] != "" || kv[1] != "" {
				opts[kv[0]] = kv[1]
			}
		}
		for k, v := range opts {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return // proto strings are UTF-8
			}
		}
		credential := map[string]bool{}
		for _, name := range p.CredentialOptions {
			if v, ok := opts[name]; ok && len(v) >= 8 {
				credential[v] = true
			}
		}
		leaks := func(b []byte) string {
			for v := range credential {
				if bytes.Contains(b, []byte(v)) {
					return v
				}
			}
			return ""
		}
		logsBefore := len(fs.logs.Bytes())
		id := fmt.Sprintf("fz-%d-%d", os.Getpid(), next.Add(1))
		created, err := fs.admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: p.Name, Options: opts}})
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("CreateEndpoint(%s, %q): %v, want the endpoint or INVALID_ARGUMENT", p.Name, opts, err)
			}
			if s := leaks([]byte(err.Error())); s != "" {
				t.Fatalf("CreateEndpoint(%s, %q): the error quotes the credential option: %v", p.Name, opts, err)
			}
			return
		}
		for k, v := range opts {
			if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
				t.Fatalf("CreateEndpoint(%s, %q) accepted an option with NUL, which PostgreSQL cannot store", p.Name, opts)
			}
		}
		got := created.GetEndpoint().GetOptions()
		if len(got) != len(opts) {
			t.Fatalf("CreateEndpoint(%s, %q) answered options %q", p.Name, opts, got)
		}
		for k, v := range opts {
			isCredential := slices.Contains(p.CredentialOptions, k)
			if g, ok := got[k]; !ok || (!isCredential && g != v) {
				t.Fatalf("CreateEndpoint(%s, %q) answered options %q", p.Name, opts, got)
			}
		}
		read, err := fs.admin.GetEndpoint(ctx, &hookverifyv1.GetEndpointRequest{Id: id})
		if err != nil {
			t.Fatalf("GetEndpoint(%s): %v", id, err)
		}
		if !maps.Equal(read.GetEndpoint().GetOptions(), got) {
			t.Fatalf("GetEndpoint(%s) options %q, CreateEndpoint answered %q", id, read.GetEndpoint().GetOptions(), got)
		}
		updated, err := fs.admin.UpdateEndpoint(ctx, &hookverifyv1.UpdateEndpointRequest{Endpoint: read.GetEndpoint()})
		if err != nil {
			t.Fatalf("UpdateEndpoint(%s) with the endpoint as read (options %q): %v", id, got, err)
		}
		if !maps.Equal(updated.GetEndpoint().GetOptions(), got) {
			t.Fatalf("UpdateEndpoint(%s) with the endpoint as read: options %q became %q", id, got, updated.GetEndpoint().GetOptions())
		}
		for _, m := range []proto.Message{created, read, updated} {
			line, _ := protojson.Marshal(m)
			if s := leaks(line); s != "" {
				t.Fatalf("an answer holds the credential option %q: %s", s, line)
			}
		}
		if s := leaks(fs.logs.Bytes()[logsBefore:]); s != "" {
			t.Fatalf("the log holds the credential option %q", s)
		}
	})
}

// FuzzInboxRPC: workers' calls carry inbox ids, lease tokens, filters, page tokens and error
// texts a worker chose, which may be anything. Properties:
//   - Lease and ListDeadLetters with any filter, limit, timeout or page token answer, or say
//     INVALID_ARGUMENT; Ack, Nack, ExtendLease and Requeue with any id and token answer, or say
//     INVALID_ARGUMENT, NOT_FOUND or FAILED_PRECONDITION: never another error (which would
//     tell a worker to retry what can never succeed, or hide a fault);
//   - a lease token other than the one given never acts on the delivery;
//   - any error text a worker gives with its nack is taken (or refused as too long), and the
//     delivery comes back with it.
func FuzzInboxRPC(f *testing.F) {
	ctx := context.Background()
	fs := newFuzzServer(f)
	const endpointID, secret = "fz-inbox", "whsec_FuzzInboxSecretR4t7Uq1"
	if _, err := fs.admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: endpointID, Provider: "stripe"}}); err != nil {
		f.Fatal(err)
	}
	if _, err := fs.admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: endpointID, Secret: secret}); err != nil {
		f.Fatal(err)
	}
	stripe, _ := protocol.Default().Lookup("stripe")
	f.Add("fz-inbox", "", int32(10), int64(30), "in_1", "lease_1", "boom", "", uint8(0), byte('x'))
	f.Add("", "fz-inbox", int32(-1), int64(-5), "", "", "\x00\xff", "ZDE6eDox", uint8(3), byte('0'))
	f.Add("\x00", "a\u2028", int32(1<<30), int64(1<<40), "\x00", "lease_\x00", strings.Repeat("e", 5000), "!!!", uint8(200), byte(0))
	var next atomic.Int64
	allowed := func(t *testing.T, call string, err error, codesOK ...codes.Code) {
		t.Helper()
		if err == nil {
			return
		}
		if c := status.Code(err); !slices.Contains(codesOK, c) {
			t.Fatalf("%s: %v, want one of %v", call, err, codesOK)
		}
	}
	f.Fuzz(func(t *testing.T, endpointFilter, scopeFilter string, limit int32, visibilitySeconds int64, inboxID, leaseToken, errText, pageToken string, pos uint8, repl byte) {
		// A call that hangs fails the input rather than stalling the fuzzer.
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for _, s := range []string{endpointFilter, scopeFilter, inboxID, leaseToken, errText, pageToken} {
			if !utf8.ValidString(s) {
				return // proto strings are UTF-8
			}
		}
		var filterIDs, filterScopes []string
		if endpointFilter != "" {
			filterIDs = []string{endpointFilter}
		}
		if scopeFilter != "" {
			filterScopes = []string{scopeFilter}
		}
		if endpointFilter == endpointID || scopeFilter == endpointID {
			filterIDs, filterScopes = []string{"none"}, nil // this target's own deliveries are leased below
		}
		visibility := &durationpb.Duration{Seconds: visibilitySeconds, Nanos: int32(pos)}
		_, err := fs.inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: filterIDs, DedupeScopes: filterScopes, MaxDeliveries: limit, VisibilityTimeout: visibility})
		allowed(t, "Lease", err, codes.InvalidArgument)
		_, err = fs.inbox.ListDeadLetters(ctx, &hookverifyv1.ListDeadLettersRequest{EndpointIds: filterIDs, DedupeScopes: filterScopes, Limit: limit, PageToken: pageToken})
		allowed(t, "ListDeadLetters", err, codes.InvalidArgument)
		lost := []codes.Code{codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition}
		if _, err := fs.inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: inboxID, LeaseToken: leaseToken}); err == nil {
			t.Fatalf("Ack(%q, %q) of no delivery succeeded", inboxID, leaseToken)
		} else {
			allowed(t, "Ack", err, lost...)
		}
		_, err = fs.inbox.Nack(ctx, &hookverifyv1.NackRequest{InboxId: inboxID, LeaseToken: leaseToken, Error: errText, RetryAfter: visibility})
		allowed(t, "Nack", err, lost...)
		_, err = fs.inbox.ExtendLease(ctx, &hookverifyv1.ExtendLeaseRequest{InboxId: inboxID, LeaseToken: leaseToken, VisibilityTimeout: visibility})
		allowed(t, "ExtendLease", err, lost...)
		_, err = fs.inbox.Requeue(ctx, &hookverifyv1.RequeueRequest{InboxId: inboxID})
		allowed(t, "Requeue", err, lost...)
		_, err = fs.inbox.Discard(ctx, &hookverifyv1.DiscardRequest{InboxId: inboxID, Reason: errText})
		allowed(t, "Discard", err, lost...)

		// A delivery of this target's own, leased, then acted on with a token one byte off.
		eventID := fmt.Sprintf("evt_%d_%d", os.Getpid(), next.Add(1))
		body := []byte(`{"id":"` + eventID + `","object":"event"}`)
		headers, err := stripe.Sign(protocol.SignInput{Body: body, EventID: eventID, Timestamp: epoch}, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		req := &hookverifyv1.VerifyRequest{EndpointId: endpointID, Method: "POST", Url: "https://h/in", Body: body}
		for _, h := range headers {
			req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
		}
		resp, err := fs.verifier.Verify(ctx, req)
		if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_ACCEPTED {
			t.Fatalf("Verify: %v, %v", resp, err)
		}
		lease := func() *hookverifyv1.InboxDelivery {
			t.Helper()
			leased, err := fs.inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: []string{endpointID}, MaxDeliveries: 100})
			if err != nil {
				t.Fatalf("Lease: %v", err)
			}
			for _, d := range leased.GetDeliveries() {
				if d.GetInboxId() == resp.GetInboxId() {
					return d
				}
			}
			t.Fatalf("the delivery %s is not leased: %v", resp.GetInboxId(), leased)
			return nil
		}
		d := lease()
		token := []byte(d.GetLeaseToken())
		token[int(pos)%len(token)] = repl
		if string(token) != d.GetLeaseToken() && utf8.Valid(token) {
			if _, err := fs.inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: string(token)}); err == nil {
				t.Fatalf("Ack with the lease token %q, not %q, succeeded", token, d.GetLeaseToken())
			} else {
				allowed(t, "Ack with another token", err, lost...)
			}
		}
		_, err = fs.inbox.Nack(ctx, &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), Error: errText, NotAttempted: pos%2 == 0})
		if err == nil {
			d = lease()
			if errText != "" && d.GetLastError() == "" {
				t.Fatalf("the nack's error %q came back as %q", errText, d.GetLastError())
			}
		} else {
			allowed(t, "Nack with an error text", err, codes.InvalidArgument)
		}
		if _, err := fs.inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
			t.Fatalf("Ack with the lease's token: %v", err)
		}
	})
}
