package protocol

import (
	"strings"
	"testing"
)

// TestAsanaHandshakeSecretEdges: the handshake takes a secret of 1 to 256 visible ASCII
// characters, both ends included ('~' is visible), echoes it and hands it to the server.
func TestAsanaHandshakeSecretEdges(t *testing.T) {
	t.Parallel()
	p := Asana()
	for _, secret := range []string{strings.Repeat("a", 256), "abc~def", "!"} {
		req := &Request{Method: "POST", Headers: Headers{{Name: "X-Hook-Secret", Value: secret}}}
		res, err := p.Verify(req, nil, Params{})
		if err != nil || res.Handshake == nil || res.Handshake.Status != 200 {
			t.Fatalf("handshake with %q = %+v, %v", secret, res, err)
		}
		if got, _ := res.Handshake.Headers.Get("X-Hook-Secret"); got != secret {
			t.Fatalf("echoed %q, want %q", got, secret)
		}
		if res.HandshakeSecret != secret {
			t.Fatalf("HandshakeSecret = %q, want %q", res.HandshakeSecret, secret)
		}
	}
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Hook-Secret", Value: "abc\x7f"}}}
	res, err := p.Verify(req, nil, Params{})
	checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
}
