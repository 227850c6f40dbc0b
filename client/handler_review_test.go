package client_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

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
	var logs syncBuffer
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
	var logs syncBuffer
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
