package client_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/syncbuf"
)

// FuzzHandlerToServer: whatever a request from the network looks like, the edge must not
// answer it as an edge misconfiguration (500 and an ERROR log line, which pages an operator):
// what the handler forwards, the server must take as a well-formed VerifyRequest (its
// INVALID_ARGUMENT is the edge's fault). FuzzHandlerHTTPRequest runs the handler against a fake
// verifier with the default settings; this runs it against a real server (SQLite, no
// endpoints), under each URL setting of the edge: the Host, a public URL base, and
// X-Forwarded-Proto trusted. Properties: no panic; never a 500 nor an ERROR log line; the
// provider gets the server's 400 for an endpoint it does not know, or the handler's own 4xx
// for a request it cannot forward.
func FuzzHandlerToServer(f *testing.F) {
	hv := startHookverify(f)
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelError}))
	settings := [][]client.Option{
		nil,
		{client.WithPublicURLBase("https://public.example.com/base")},
		{client.WithTrustForwardedProto()},
	}
	var served atomic.Bool
	observe := func(*http.Request, client.Outcome) { served.Store(true) }
	var muxes []*http.ServeMux
	for _, opts := range settings {
		conn := dial(f, hv.addr, append(opts, client.WithMaxBodyBytes(1<<12), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))...)
		mux := http.NewServeMux()
		mux.Handle("/hooks/{endpoint}", client.Handler(conn, client.WithLogger(log), client.WithObserver(observe)))
		muxes = append(muxes, mux)
	}

	f.Add([]byte("POST /hooks/shop-stripe?x=1 HTTP/1.1\r\nHost: hooks.example.com\r\nStripe-Signature: t=1,v1=ab\r\nContent-Length: 14\r\n\r\n{\"id\":\"evt_1\"}"), uint8(0))
	f.Add([]byte("POST http://hooks.example.com/hooks/ep?x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"), uint8(1))
	f.Add([]byte("POST HTTP://H/hooks/ep HTTP/1.1\r\nHost: h\r\nX-Forwarded-Proto: HTTPS, http\r\n\r\n"), uint8(2))
	f.Add([]byte("GET /hooks/ep?hub.challenge=1 HTTP/1.0\r\n\r\n"), uint8(0))
	f.Add([]byte("PUT /hooks/ep HTTP/1.1\r\nHost: [::1]:80\r\nA: \r\n\r\n"), uint8(1))
	f.Add([]byte("POST /hooks/ep HTTP/1.1\r\nHost: a%41b\r\n\r\n"), uint8(0))
	f.Add([]byte("DELETE /hooks/e%00p HTTP/1.1\r\nHost: h:\r\n\r\n"), uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, setting uint8) {
		r, _, ok := requestFromWire(raw)
		if !ok {
			return // net/http answers 400 itself
		}
		logs.Take()
		served.Store(false)
		w := httptest.NewRecorder()
		muxes[int(setting)%len(muxes)].ServeHTTP(w, r)
		if line := logs.Take(); w.Code == http.StatusInternalServerError || strings.Contains(line, "level=ERROR") {
			t.Fatalf("setting %d: %q %q (Host %q) answered %d %q, as an edge misconfiguration:\n%s",
				int(setting)%len(muxes), r.Method, r.RequestURI, r.Host, w.Code, w.Body.String(), line)
		}
		if !served.Load() {
			return // the mux's own answer (a redirect to the clean path, 404, 405)
		}
		if w.Code < 400 || w.Code > 499 {
			t.Fatalf("setting %d: %q %q (Host %q), to a server without endpoints, answered %d %q",
				int(setting)%len(muxes), r.Method, r.RequestURI, r.Host, w.Code, w.Body.String())
		}
	})
}
