package server_test

import (
	"context"
	"testing"

	"github.com/hookverify/hookverify/server"
)

// TestCallWithoutAuthenticationIsLocal: without authentication (the loopback-only mode) a
// call's principal is "local", authenticated by "none", as documented; one set by the
// interceptor is returned as set.
func TestCallWithoutAuthenticationIsLocal(t *testing.T) {
	if got, want := server.PrincipalFrom(context.Background()), (server.Principal{Name: "local", Method: "none"}); got != want {
		t.Errorf("PrincipalFrom(a context without one) = %+v, want %+v", got, want)
	}
	p := server.Principal{Name: "token:tok_0123456789abcdef", Method: "token"}
	if got := server.PrincipalFrom(server.WithPrincipal(context.Background(), p)); got != p {
		t.Errorf("PrincipalFrom(WithPrincipal(%+v)) = %+v", p, got)
	}
}
