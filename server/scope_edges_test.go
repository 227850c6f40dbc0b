package server_test

import (
	"strings"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestScopePrefixIsAtMost127Characters: a scope's endpoints part is at most as long as an
// endpoint id (128 bytes), a prefix with its "*" too: a prefix of 127 characters is accepted,
// one of 128 refused.
func TestScopePrefixIsAtMost127Characters(t *testing.T) {
	for _, kind := range []string{"verify", "inbox"} {
		if _, err := server.ParseScope(kind + ":" + strings.Repeat("a", 127) + "*"); err != nil {
			t.Errorf("ParseScope(%s:127 characters*) = %v, want it parsed", kind, err)
		}
		if sc, err := server.ParseScope(kind + ":" + strings.Repeat("a", 128) + "*"); err == nil {
			t.Errorf("ParseScope(%s:128 characters*) = %+v, want an error", kind, sc)
		}
	}
}

// TestAdminSeesEveryEndpointsInboxStats: admin covers every other scope, inbox included, so
// GetInboxStats answers an admin with every endpoint.
func TestAdminSeesEveryEndpointsInboxStats(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	resp, err := hookverifyv1.NewInboxServiceClient(e.dial(t, nil)).GetInboxStats(withToken(t.Context(), e.tokens["admin"]), &hookverifyv1.GetInboxStatsRequest{})
	if err != nil || len(resp.GetEndpoints()) != 3 {
		t.Fatalf("GetInboxStats by an admin = %v, %v; want the 3 endpoints", resp.GetEndpoints(), err)
	}
}
