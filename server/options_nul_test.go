package server_test

import (
	"strings"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestOptionsWithNULAreRefusedOnEveryBackend: an option value may be any UTF-8 string gRPC
// carries, NUL included, and some protocols' option checks take one (generic-hmac's prefix and
// template, an id_pointer naming a key with NUL). PostgreSQL's JSONB cannot hold NUL: there
// CreateEndpoint failed in the store with a bare "create endpoint: invalid argument", naming
// neither the option nor the problem, while SQLite stored the same endpoint. The same request
// must get the same answer on every backend, saying which option is wrong and why.
func TestOptionsWithNULAreRefusedOnEveryBackend(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for i, opts := range []map[string]string{
			{"header": "X-Sig", "prefix": "v1\x00"},
			{"header": "X-Sig", "id_pointer": "/id\x00"},
		} {
			_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
				Id: "gh" + string(rune('a'+i)), Provider: "generic-hmac", Options: opts}})
			if err == nil {
				t.Errorf("CreateEndpoint with options %q succeeded; want INVALID_ARGUMENT naming the option", opts)
				continue
			}
			wantCode(t, err, 3) // InvalidArgument
			if !strings.Contains(err.Error(), "NUL") {
				t.Errorf("CreateEndpoint with options %q: %v, want an error saying the option holds NUL", opts, err)
			}
		}
		// An update is checked alike.
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "gh-ok", Provider: "generic-hmac", Options: map[string]string{"header": "X-Sig"}})
		_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "gh-ok", Options: map[string]string{"header": "X-Sig", "template": "{body}\x00"}}})
		if err == nil || !strings.Contains(err.Error(), "NUL") {
			t.Errorf("UpdateEndpoint with a template holding NUL: %v, want INVALID_ARGUMENT saying so", err)
		}
	})
}
