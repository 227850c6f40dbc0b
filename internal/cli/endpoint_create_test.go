package cli

import (
	"strings"
	"testing"
)

// TestEndpointCreateRefusesAnIDOfTheWrongFormBeforeCalling: an endpoint id or dedupe scope
// that no endpoint can have (internal/ident: 1-128 bytes of A-Z a-z 0-9 . _ -) is a value of
// the wrong form on the command line, exit 2 before any call as README's exit statuses say;
// it was sent, and the server's INVALID_ARGUMENT made it exit 1 like a failed call. The
// server here is an address nothing listens on: a call would fail, not be refused.
func TestEndpointCreateRefusesAnIDOfTheWrongFormBeforeCalling(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--id", "shop stripe", "--provider", "stripe"}, "--id"},
		{[]string{"--id", strings.Repeat("a", 129), "--provider", "stripe"}, "--id"},
		{[]string{"--id", "shop-stripe", "--provider", "stripe", "--dedupe-scope", "shop/stripe"}, "--dedupe-scope"},
	} {
		args := append([]string{"endpoint", "create", "--server", "127.0.0.1:1", "--timeout", "2s"}, c.args...)
		code, out, errOut := run(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "rpc error") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 naming %s, before any call", c.args, code, out, errOut, c.want)
		}
	}
}
