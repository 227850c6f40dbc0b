package server_test

import (
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestAuditFilterWithNULMatchesNothing: an endpoint filter holding NUL names no endpoint, so
// it lists no event, on every backend. PostgreSQL's text cannot hold NUL, and the filter was
// turned into the empty string to match nothing, but the empty string is the endpoint of every
// token event (token.create, token.revoke): the listing "of an endpoint" answered those.
func TestAuditFilterWithNULMatchesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "ep", Provider: "stripe"})
		if _, err := e.tokens.CreateToken(t.Context(), &hookverifyv1.CreateTokenRequest{Name: "edge", Scopes: []string{"verify:*"}}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"\x00", "ep\x00"} {
			resp, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndpointId: id})
			if err != nil {
				t.Fatalf("ListAuditEvents(%q): %v", id, err)
			}
			if n := len(resp.GetEvents()); n != 0 {
				t.Errorf("ListAuditEvents(endpoint %q) = %d events, first %s %q; want none", id, n, resp.GetEvents()[0].GetAction(), resp.GetEvents()[0].GetEndpointId())
			}
		}
	})
}
