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
	f := newFakeServer()
	addr := f.start(t)
	quiet := client.WithLogger(slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(client.Handler(dial(t, addr), client.EndpointFromPath("/hooks/"), quiet))
	defer srv.Close()
	for _, raw := range []string{
		"POST /hooks/ep HTTP/1.1\r\nHost: a%41b\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: hooks%2eexample.com:8443\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: b%C3%BCcher.example\r\nContent-Length: 2\r\n\r\n{}",
		"POST http://b%C3%BCcher.example/hooks/ep HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\n{}",
	} {
		status, body := rawExchange(t, srv, raw)
		if status != http.StatusBadRequest || body != `{"status":"rejected","reason":"unreadable_request"}` {
			t.Errorf("%q: %d %s; want 400 unreadable_request", raw, status, body)
		}
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("Verify called %d times", n)
	}

	public := httptest.NewServer(client.Handler(dial(t, addr, client.WithPublicURLBase("https://hooks.example.com")), client.EndpointFromPath("/hooks/"), quiet))
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
