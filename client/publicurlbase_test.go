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
