package client_test

import (
	"net/http"
	"testing"
)

// TestHandlerRefusesAZoneInTheURLHost: a %-escape inside an IPv6 literal is a zone ("%25eth0",
// RFC 6874), which names an interface of the sender's host, never one a provider calls; like
// the escapes TestHandlerRefusesAPercentEscapeInTheURLHost sends in a reg-name, it is answered
// 400 without a call. Hosts that are hosts (an IPv6 literal without a zone, with a port) are
// still forwarded.
func TestHandlerRefusesAZoneInTheURLHost(t *testing.T) {
	t.Parallel()
	f, _, srv := hostEdge(t)
	wantUnreadableHosts(t, f, srv,
		"POST /hooks/ep HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: [fe80::1%25eth0]:8443\r\nContent-Length: 2\r\n\r\n{}",
	)
	for _, raw := range []string{
		"POST /hooks/ep HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\nContent-Length: 2\r\n\r\n{}",
		"POST /hooks/ep HTTP/1.1\r\nHost: hooks-1.example.com:8443\r\nContent-Length: 2\r\n\r\n{}",
	} {
		if status, body := rawExchange(t, srv, raw); status != http.StatusOK {
			t.Errorf("%q: %d %s; want 200", raw, status, body)
		}
	}
}
