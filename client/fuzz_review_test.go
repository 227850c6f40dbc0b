package client_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/ident"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	g := grpc.NewServer()
	hookverifyv1.RegisterVerifierServiceServer(g, fake)
	go g.Serve(lis)
	f.Cleanup(g.Stop)
	conn, err := client.Dial(lis.Addr().String(), client.WithMaxBodyBytes(1<<12))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/{endpoint}", client.Handler(conn, client.WithLogger(slog.New(slog.DiscardHandler))))

	f.Add([]byte("POST /hooks/shop-stripe?x=1 HTTP/1.1\r\nHost: hooks.example.com\r\nStripe-Signature: t=1,v1=ab\r\nContent-Length: 14\r\n\r\n{\"id\":\"evt_1\"}"))
	f.Add([]byte("POST /hooks/a%2Fb HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Add([]byte("POST /hooks/%zz HTTP/1.1\r\nHost: h\r\nX-A: \xff\r\n\r\n"))
	f.Add([]byte("POST http://other.example/hooks/ep HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("POST /hooks/ep HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n" + strings.Repeat("x", 5000)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // net/http answers 400 itself
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.RemoteAddr = "192.0.2.1:1234"
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
