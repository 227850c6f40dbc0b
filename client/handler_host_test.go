package client_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookverify/hookverify/client"
)

// rawExchange writes raw to srv over a new connection and returns the answer's status and body.
func rawExchange(t *testing.T, srv *httptest.Server, raw string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHandlerRefusesAPercentEscapeInTheURLHost: net/http takes "Host: a%41b" (it checks bytes
// only), and an absolute-form target whose host escapes a non-ASCII byte
// ("http://b%C3%BCcher.example/..."), and the handler forwarded them as the URL's host. No
// provider can send either: the Host names the edge as the provider's HTTP client resolved it,
// a DNS name (letters, digits, hyphens; an IDN goes as its xn-- form) or an IP address, and
// every HTTP client decodes or refuses a %-escape in a host. The server then stored a URL that
// Go's url.Parse refuses ("invalid URL escape"), and the protocols that parse it (handshakes,
// Braintree, Nylas, Mailchimp) rejected the delivery as malformed. Like every other Host that
// is no host, it is answered 400 without a call, as the Node edge answers it; behind
// WithPublicURLBase the Host makes no URL and is forwarded as received.
func TestHandlerRefusesAPercentEscapeInTheURLHost(t *testing.T) {
	t.Parallel()
	f, addr, srv := hostEdge(t)
	wantUnreadableHosts(t, f, srv,
		"POST /hooks/ep HTTP/1.1\r\nHost: a%41b\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: hooks%2eexample.com:8443\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: b%C3%BCcher.example\r\nContent-Length: 2\r\n\r\n{}",
		"POST http://b%C3%BCcher.example/hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}",
	)

	public := httptest.NewServer(client.Handler(dial(t, addr, client.WithPublicURLBase("https://hooks.example.com")), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler))))
	defer public.Close()
	if status, _ := rawExchange(t, public, "POST /hooks/ep HTTP/1.1\r\nHost: a%41b\r\nContent-Length: 2\r\n\r\n{}"); status != http.StatusOK {
		t.Errorf("behind a public URL base: %d, want 200", status)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 1 || f.requests[0].GetUrl() != "https://hooks.example.com/hooks/ep" {
		t.Errorf("behind a public URL base, forwarded %v", f.requests)
	}
}

// hostEdge starts a fake server and a client.Handler on it that logs nothing, for raw
// requests with hosts; it returns the fake server, its address and the handler's server.
func hostEdge(t *testing.T) (*fakeServer, string, *httptest.Server) {
	t.Helper()
	f := newFakeServer()
	addr := f.start(t)
	srv := httptest.NewServer(client.Handler(dial(t, addr), client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler))))
	t.Cleanup(srv.Close)
	return f, addr, srv
}

// wantUnreadableHosts sends each raw request to srv and checks that every one is answered 400
// unreadable_request and that f got no Verify call.
func wantUnreadableHosts(t *testing.T, f *fakeServer, srv *httptest.Server, raws ...string) {
	t.Helper()
	for _, raw := range raws {
		status, body := rawExchange(t, srv, raw)
		if status != http.StatusBadRequest || body != `{"status":"rejected","reason":"unreadable_request"}` {
			t.Errorf("%q: %d %s; want 400 unreadable_request", raw, status, body)
		}
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("Verify called %d times", n)
	}
}
