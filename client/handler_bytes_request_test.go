package client_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/client"
)

// TestHandlerAnswersAnOversizedExpectContinueAtOnce: net/http decides what to do with a body
// the handler left unread by the type of the request's Body. The byte bound replaced r.Body
// (the request net/http holds) with its own reader, so a provider that declared a body over the
// limit and waited for "100 Continue" got no answer: net/http, no longer seeing its
// expect-continue reader, read the body it had never asked for before writing the 413, until
// the provider gave up waiting or the server's ReadTimeout.
func TestHandlerAnswersAnOversizedExpectContinueAtOnce(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(answeringHandler(t, 1<<20))
	t.Cleanup(srv.Close)

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", 1<<20)
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a declared body over the limit, waiting for 100 Continue: %v; want 413 at once", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("answer %d, want 413", resp.StatusCode)
	}
}

// TestHandlerGivesBackBytesReadAfterItsAnswer: a middleware that drains what is left of a body
// once the handler has answered (so the connection can be reused) read through the handler's
// reader, which took those bytes from the bound after they had been given back and never
// returned them: after a few refused large bodies, every delivery was answered 503 for good.
func TestHandlerGivesBackBytesReadAfterItsAnswer(t *testing.T) {
	t.Parallel()
	h := answeringHandler(t, 64<<10)
	drain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		_, _ = io.Copy(io.Discard, r.Body)
	})
	for i := range 4 {
		// Over the body limit: answered 413, then drained by the middleware.
		r := httptest.NewRequest("POST", "http://x/hooks/ep", strings.NewReader(strings.Repeat("z", 40<<10)))
		w := httptest.NewRecorder()
		drain.ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("oversized body %d: %d, want 413", i, w.Code)
		}
	}
	r := httptest.NewRequest("POST", "http://x/hooks/ep", bytes.NewReader([]byte("{}")))
	w := httptest.NewRecorder()
	drain.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("a small delivery, alone, after the oversized ones: %d, want 200", w.Code)
	}
}

// answeringHandler is a handler bounded to bound bytes at once, with a body limit of 1 KiB,
// whose verifier answers at once.
func answeringHandler(t *testing.T, bound int64) http.Handler {
	t.Helper()
	v := newHeldVerifier()
	close(v.release)
	conn := dial(t, "127.0.0.1:1", client.WithMaxBodyBytes(1<<10))
	conn.Verifier = v
	return client.Handler(conn, client.EndpointFromPath("/hooks/"),
		client.WithLogger(slog.New(slog.DiscardHandler)), client.WithMaxBytesInFlight(bound))
}

// TestHandlerDoesNotReserveALargeContentLengthBeforeItsBytes: a Content-Length was reserved
// whole before the body was read, so a few clients announcing large bodies and sending nothing
// held the whole bound until the server's ReadTimeout, and every real delivery meanwhile was
// answered 503. Only the first 64 KiB are reserved ahead; the rest as it arrives.
func TestHandlerDoesNotReserveALargeContentLengthBeforeItsBytes(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier()
	close(v.release)
	conn := dial(t, "127.0.0.1:1", client.WithMaxBodyBytes(1<<20))
	conn.Verifier = v
	h := client.Handler(conn, client.EndpointFromPath("/hooks/"),
		client.WithLogger(slog.New(slog.DiscardHandler)), client.WithMaxBytesInFlight(1<<20))
	entered := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	for range 4 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A body of the largest size announced, never sent.
		fmt.Fprintf(c, "POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{", 1<<20)
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the announced request did not reach the handler")
		}
	}
	// The four hold what they reserved until they end; a real delivery must still fit.
	resp, err := http.Post(srv.URL+"/hooks/ep", "application/json", strings.NewReader(`{"id":"evt_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a delivery while four clients announced 1 MiB bodies and sent nothing: %d, want 200", resp.StatusCode)
	}
}
