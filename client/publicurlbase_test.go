package client_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/client"
)

// TestPublicURLBaseDropsEveryTrailingSlash: the forwarded URL is the base followed by the
// request URI, which begins with "/". WithPublicURLBase dropped one trailing slash only, so
// "https://h//" forwarded "https://h//hooks/ep", a URL the provider did not call (a
// URL-signing provider's signature fails, a 4xx most never retry), where the Node edge, from
// the same base, forwards "https://h/hooks/ep".
func TestPublicURLBaseDropsEveryTrailingSlash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, want string }{
		{"https://hooks.example.com", "https://hooks.example.com/hooks/ep?a=1"},
		{"https://hooks.example.com/", "https://hooks.example.com/hooks/ep?a=1"},
		{"https://hooks.example.com//", "https://hooks.example.com/hooks/ep?a=1"},
		{"https://hooks.example.com///", "https://hooks.example.com/hooks/ep?a=1"},
		{"https://hooks.example.com/edge//", "https://hooks.example.com/edge/hooks/ep?a=1"},
	} {
		r := httptest.NewRequest("POST", "/hooks/ep?a=1", strings.NewReader("{}"))
		req, err := newConn(t, client.WithPublicURLBase(tc.base)).BuildRequest("ep", r)
		if err != nil {
			t.Errorf("base %q: %v", tc.base, err)
			continue
		}
		if req.GetUrl() != tc.want {
			t.Errorf("base %q: forwarded %q, want %q", tc.base, req.GetUrl(), tc.want)
		}
	}
}

// TestPublicURLBaseOfSlashesOnlyRefused: WithPublicURLBase drops every trailing slash before
// Dial checks the base, and Dial checks only a base that is not empty. "//" (or "/") became
// "", which Dial took as no base at all: it started without the public URL it was given,
// forwarding the Host the proxy set, so every URL-signed delivery failed its check, in
// silence. Dial refuses a base with no scheme or host, as its documentation says.
func TestPublicURLBaseOfSlashesOnlyRefused(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"/", "//", "///"} {
		conn, err := client.Dial("127.0.0.1:1", client.WithPublicURLBase(base))
		if err == nil {
			conn.Close()
			t.Errorf("WithPublicURLBase(%q): Dial took it", base)
		}
	}
	// No base given, or an empty one: none is used, as before.
	for _, opts := range [][]client.Option{nil, {client.WithPublicURLBase("")}} {
		conn, err := client.Dial("127.0.0.1:1", opts...)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
}
