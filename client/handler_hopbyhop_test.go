package client_test

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/client"
)

// TestHandlerDoesNotForwardHopByHopHeaders: fields about the connection rather than the
// delivery (RFC 9110 7.6.1: Connection and the fields it names, Keep-Alive, Proxy-Connection,
// TE, Trailer, Transfer-Encoding, Upgrade, and the proxy credentials Proxy-Authorization and
// Proxy-Authenticate, as httputil.ReverseProxy drops them) were forwarded and stored with the
// delivery, except Transfer-Encoding and Trailer, which net/http removes first; the Node edge
// forwarded all of them. No provider signs them, a proxy in front or HTTP/2 would have removed
// them, and Proxy-Authorization is a credential for a proxy, not for hookverify: the same
// delivery made different records depending on the path it took. Both edges now drop them;
// Host stays, even when Connection names it.
func TestHandlerDoesNotForwardHopByHopHeaders(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	var seen http.Header
	h := client.Handler(dial(t, f.start(t)), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler)),
		client.WithObserver(func(r *http.Request, _ client.Outcome) { seen = r.Header.Clone() }))
	ts := httptest.NewServer(h)
	defer ts.Close()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write([]byte("POST /hooks/ep HTTP/1.1\r\nHost: a.example\r\n" +
		"Connection: keep-alive, x-hop , host\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n" +
		"TE: trailers\r\nTrailer: X-Trailer\r\nUpgrade: h2c\r\nProxy-Authorization: Basic dTpw\r\nProxy-Authenticate: Basic\r\n" +
		"X-Keep: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: t\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	f.mu.Lock()
	requests := slices.Clone(f.requests)
	f.mu.Unlock()
	if resp.StatusCode != 200 || len(requests) != 1 {
		t.Fatalf("status %d, %d calls; want 200 and one call", resp.StatusCode, len(requests))
	}
	var got []string
	for _, hf := range requests[0].GetHeaders() {
		got = append(got, hf.GetName()+": "+hf.GetValue())
	}
	if want := []string{"Host: a.example", "X-Keep: 2"}; !slices.Equal(got, want) {
		t.Errorf("forwarded headers %q, want %q", got, want)
	}
	if string(requests[0].GetBody()) != "{}" {
		t.Errorf("body %q", requests[0].GetBody())
	}
	// The request the caller's code sees (middleware, the observer) keeps its headers.
	if seen.Get("Connection") == "" || seen.Get("Proxy-Authorization") == "" {
		t.Errorf("the handler changed the request's own headers: %v", seen)
	}
}

// TestHandlerForwardsTheAbsoluteFormAuthorityAsHost pins what the Node edge now does too: for
// "POST http://target/hooks/ep", a server must ignore the Host header and use the target's
// authority (RFC 9112 3.2.2); the Host forwarded (which URL-signing protocols read) is it.
func TestHandlerForwardsTheAbsoluteFormAuthorityAsHost(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	ts := httptest.NewServer(client.Handler(dial(t, f.start(t)), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler))))
	defer ts.Close()
	for _, raw := range []string{
		"POST http://target.example/hooks/ep?a=1 HTTP/1.1\r\nX-A: 1\r\nHost: other.example\r\nContent-Length: 0\r\n\r\n",
		"POST http://target.example/hooks/ep?a=1 HTTP/1.0\r\nX-A: 1\r\nContent-Length: 0\r\n\r\n",
	} {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write([]byte(raw))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		f.mu.Lock()
		n := len(f.requests)
		if resp.StatusCode != 200 || n == 0 {
			f.mu.Unlock()
			t.Fatalf("%q: status %d, %d calls", raw, resp.StatusCode, n)
		}
		req := f.requests[n-1]
		f.mu.Unlock()
		hosts := 0
		for _, hf := range req.GetHeaders() {
			if strings.EqualFold(hf.GetName(), "Host") {
				hosts++
				if hf.GetValue() != "target.example" {
					t.Errorf("%q: Host %q forwarded, want target.example", raw, hf.GetValue())
				}
			}
		}
		if hosts != 1 || req.GetUrl() != "http://target.example/hooks/ep?a=1" {
			t.Errorf("%q: %d Host headers, url %q", raw, hosts, req.GetUrl())
		}
	}
}

// TestEarlyAnswersDoNotWaitForTheBody: an answer written before the body is read (an id no
// endpoint can have, headers the server would refuse, a Content-Length over the limit) closes
// the connection. Without Connection: close net/http reads up to 256 KiB of the body before
// sending it, so a body that stalls held the answer until the server's read timeout, when the
// connection closed, most often without the answer.
func TestEarlyAnswersDoNotWaitForTheBody(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	ts := httptest.NewServer(client.Handler(dial(t, f.start(t), client.WithMaxBodyBytes(100)), client.EndpointFromPath("/hooks/"),
		client.WithLogger(slog.New(slog.DiscardHandler))))
	defer ts.Close()
	for _, head := range []string{
		"POST /hooks/a%20b HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n",                     // no endpoint can have it
		"POST /hooks/ep HTTP/1.1\r\nHost: h\r\nX-Bad: \xff\r\nContent-Length: 10\r\n\r\n",         // not UTF-8
		"POST /hooks/ep HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n",                      // over the limit
		"POST /hooks/ep HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-Bad: \xfe\r\n\r\n", // chunked, not UTF-8
	} {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = c.Write([]byte(head)) // and no body: it stalls
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Errorf("%q: no answer while the body stalls: %v", head, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || !resp.Close {
			t.Errorf("%q: %d, Connection close %v; want the refusal at once, closing", head, resp.StatusCode, resp.Close)
		}
	}
}
