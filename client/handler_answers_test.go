package client_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestHandlerAnswersAMessageOverTheReceiveLimitWith413: verifier.proto and the README's
// verdict table say RESOURCE_EXHAUSTED without RetryInfo is gRPC refusing a message over the
// server's receive limit, which no retry can pass: the edge answers 413. The handler answered
// every RESOURCE_EXHAUSTED 503, so the provider re-sent the same oversized body for days. With
// RetryInfo it is backpressure: 503 with the hint as Retry-After.
func TestHandlerAnswersAMessageOverTheReceiveLimitWith413(t *testing.T) {
	t.Parallel()
	// A real receive limit: gRPC itself refuses the message before Verify runs.
	small := newFakeServer()
	conn := dial(t, small.start(t, grpc.MaxRecvMsgSize(1<<10)))
	var logs syncbuf.Buffer
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/hooks/ep", bytes.NewReader(make([]byte, 4<<10))))
	if w.Code != http.StatusRequestEntityTooLarge || w.Header().Get("Retry-After") != "" {
		t.Errorf("over the server's receive limit: status %d, Retry-After %q; want 413 without one", w.Code, w.Header().Get("Retry-After"))
	}
	if w.Body.String() != `{"status":"rejected","reason":"body_too_large"}` {
		t.Errorf("body %s", w.Body)
	}
	if small.count("Verify") != 0 {
		t.Errorf("Verify ran %d times", small.count("Verify"))
	}
	// A body within the limit still goes through.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}")))
	if w.Code != 200 {
		t.Errorf("small body: status %d", w.Code)
	}

	// The status as a server (or a proxy in front of it) sends it, with and without RetryInfo.
	f := newFakeServer()
	f.respond = func(_ context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		st := status.New(codes.ResourceExhausted, "message larger than max")
		if req.GetEndpointId() == "busy" {
			st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(30 * time.Second)})
		}
		return nil, st.Err()
	}
	var seen outcomes
	h = client.Handler(dial(t, f.start(t), client.WithRetry(client.RetryPolicy{MaxAttempts: 1})),
		client.EndpointFromPath("/hooks/"), client.WithObserver(seen.observe), client.WithLogger(slog.New(slog.DiscardHandler)))
	for _, tc := range []struct {
		path       string
		status     int
		retryAfter string
	}{{"/hooks/big", 413, ""}, {"/hooks/busy", 503, "30"}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", tc.path, strings.NewReader("{}")))
		if w.Code != tc.status || w.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("%s: status %d, Retry-After %q; want %d, %q", tc.path, w.Code, w.Header().Get("Retry-After"), tc.status, tc.retryAfter)
		}
		if o := seen.last(); o.Status != tc.status || o.Code != codes.ResourceExhausted || !o.CalledVerifier {
			t.Errorf("%s: outcome %+v", tc.path, o)
		}
	}
}

// TestBuildRequestRefusesAHostThatIsNotAHost: RFC 9110 7.2 has Host = uri-host [ ":" port ]
// (RFC 3986: an IP-literal, IPv4 address or reg-name, and digits), and a server MUST answer 400
// to a Host with an invalid value. Go's HTTP/1 server checks bytes only ("a:b:c", "[x]",
// "%zz" pass) and its HTTP/2 server takes almost any :authority (a space, say): BuildRequest
// forwarded them as the URL's host, which the server's protocols then fail to parse, and the
// inbox stores. Such a request is refused (400); a host that is one is forwarded as received.
func TestBuildRequestRefusesAHostThatIsNotAHost(t *testing.T) {
	t.Parallel()
	conn := newConn(t)
	bad := []string{
		"a b", "a\tb", "a\x01b", "a\x7fb", "héllo.example", "user@hooks.example.com", "a:b:c", "host:8x", ":8080",
		"[notv6]", "[1.2.3.4]", "[::1", "::1", "[::1]x", "[::1]:x", "[fe80::1%eth0]", "a%zz", "a%4", "%41bc", "a]b", "a[b",
		"a\\b", "a\"b", "a<b", "a|b", "a^b", "a`b", "a{b",
	}
	for _, host := range bad {
		r := httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}"))
		r.Host, r.RequestURI = host, "/hooks/ep"
		if req, err := conn.BuildRequest("ep", r); !errors.Is(err, client.ErrUnforwardable) {
			t.Errorf("Host %q: BuildRequest = url %q, %v; want ErrUnforwardable", host, req.GetUrl(), err)
		}
	}
	good := []string{
		"hooks.example.com", "hooks.example.com:8443", "HOOKS.Example.COM.", "127.0.0.1", "127.0.0.1:80",
		"[::1]", "[::1]:8080", "[2001:db8::ffff:1.2.3.4]", "[v1.x:y]", "xn--bcher-kva.example", "a-b_c~d",
		"!$&'()*+,;=", "hooks.example.com:",
	}
	for _, host := range good {
		r := httptest.NewRequest("POST", "/hooks/ep?x=1", strings.NewReader("{}"))
		r.Host, r.RequestURI = host, "/hooks/ep?x=1"
		if req, err := conn.BuildRequest("ep", r); err != nil || req.GetUrl() != "http://"+host+"/hooks/ep?x=1" {
			t.Errorf("Host %q: BuildRequest = url %q, %v", host, req.GetUrl(), err)
		}
	}
	// The authority of an absolute-form request target is the same kind of value; userinfo in
	// it is an error (RFC 9110 4.2.4).
	for _, target := range []string{"http://user@hooks.example.com/hooks/ep", "http://a:b:c/hooks/ep", "https://[x]/hooks/ep"} {
		r := httptest.NewRequest("POST", "/hooks/ep", strings.NewReader("{}"))
		r.RequestURI = target
		if req, err := conn.BuildRequest("ep", r); !errors.Is(err, client.ErrUnforwardable) {
			t.Errorf("target %q: BuildRequest = url %q, %v; want ErrUnforwardable", target, req.GetUrl(), err)
		}
	}
}

// TestHandlerAnswersAHostThatIsNotAHostWith400 runs the check through a real HTTP/1.1 server:
// the Hosts net/http lets through reach the handler, which answers 400 without a call.
func TestHandlerAnswersAHostThatIsNotAHostWith400(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	ts := httptest.NewServer(client.Handler(dial(t, f.start(t)), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler))))
	defer ts.Close()
	for _, host := range []string{"a:b:c", "[x]", "a%zz", "host:8x"} {
		req, _ := http.NewRequest("POST", ts.URL+"/hooks/ep", strings.NewReader("{}"))
		req.Host = host
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Logf("Host %q: the client refuses it: %v", host, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("Host %q: status %d, want 400", host, resp.StatusCode)
		}
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("Verify called %d times", n)
	}
}

// TestHandlerAnswersAnHTTP2AuthorityThatIsNotAHostWith400: Go's HTTP/2 server refuses only "@"
// in :authority; a space or a bad port reached the URL. The handler answers 400 without a call.
func TestHandlerAnswersAnHTTP2AuthorityThatIsNotAHostWith400(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	ts := httptest.NewUnstartedServer(client.Handler(dial(t, f.start(t)), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler))))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	for _, authority := range []string{"a b", "h:8x", "[x]", "hooks.example.com"} {
		c, fr := postWithHTTP2Authority(t, ts.Listener.Addr().String(), authority)
		got := ""
		dec := hpack.NewDecoder(4096, func(hf hpack.HeaderField) {
			if hf.Name == ":status" {
				got = hf.Value
			}
		})
		for got == "" {
			frame, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf(":authority %q: %v", authority, err)
			}
			if h, ok := frame.(*http2.HeadersFrame); ok {
				dec.Write(h.HeaderBlockFragment())
			}
			if _, ok := frame.(*http2.RSTStreamFrame); ok {
				got = "reset"
			}
		}
		c.Close()
		want := "400"
		if authority == "hooks.example.com" {
			want = "200"
		}
		if got != want {
			t.Errorf(":authority %q: status %s, want %s", authority, got, want)
		}
	}
	if n := f.count("Verify"); n != 1 {
		t.Errorf("Verify called %d times, want 1", n)
	}
}
