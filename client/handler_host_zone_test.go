package client_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hookverify/hookverify/client"
)

// TestHandlerRefusesAZoneInTheURLHost: a %-escape inside an IPv6 literal is a zone ("%25eth0",
// RFC 6874), which names an interface of the sender's host, never one a provider calls; like
// the escapes TestHandlerRefusesAPercentEscapeInTheURLHost sends in a reg-name, it is answered
// 400 without a call. Hosts that are hosts (an IPv6 literal without a zone, with a port) are
// still forwarded.
func TestHandlerRefusesAZoneInTheURLHost(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	addr := f.start(t)
	quiet := client.WithLogger(slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(client.Handler(dial(t, addr), client.EndpointFromPath("/hooks/"), quiet))
	defer srv.Close()
	for _, raw := range []string{
		"POST /hooks/ep HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: [fe80::1%25eth0]:8443\r\nContent-Length: 2\r\n\r\n{}",
	} {
		status, body := rawExchange(t, srv, raw)
		if status != http.StatusBadRequest || body != `{"status":"rejected","reason":"unreadable_request"}` {
			t.Errorf("%q: %d %s; want 400 unreadable_request", raw, status, body)
		}
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("Verify called %d times for hosts with a zone", n)
	}
	for _, raw := range []string{
		"POST /hooks/ep HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: hooks-1.example.com:8443\r\nContent-Length: 2\r\n\r\n{}",
	} {
		if status, body := rawExchange(t, srv, raw); status != http.StatusOK {
			t.Errorf("%q: %d %s; want 200", raw, status, body)
		}
	}
}
