package server_test

import (
	"net/url"
	"strings"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
)

// TestVerifyTokenRefusalIgnoresUnopenedSecret: Meta's subscription GET is checked against the
// endpoint's verify_token option, stored as a digest, never against a signing secret. A wrong
// token is refused whatever the secrets are (protocol.Rejection.WithoutKeys), also on an
// instance that cannot open the endpoint's secret: UNAVAILABLE there blamed a master key the
// answer does not depend on (with an ERROR log an anonymous GET could cause), where an
// instance holding the key, or one with no secret at all, answers SIGNATURE_MISMATCH.
func TestVerifyTokenRefusalIgnoresUnopenedSecret(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		const token = "meta-verify-3f9a27c1"
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "meta-mk", Provider: "meta", Options: map[string]string{"verify_token": token}})
		_, secret, err := protocol.Meta().ExampleSecret()
		if err != nil {
			t.Fatal(err)
		}
		e.addSecret(t, "meta-mk", secret)
		handshake := func(in *instance, presented string) (*hookverifyv1.VerifyResponse, error) {
			return in.call(t, &hookverifyv1.VerifyRequest{EndpointId: "meta-mk", Method: "GET",
				Url: "https://hooks.example.com/meta-mk?hub.mode=subscribe&hub.challenge=31337&hub.verify_token=" + url.QueryEscape(presented)})
		}
		wantMismatch := func(in *instance, what string) {
			t.Helper()
			resp, err := handshake(in, token+"x")
			if err != nil || resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH {
				t.Fatalf("%s: a wrong verify_token got %v, %v; want SIGNATURE_MISMATCH", what, resp.GetRejectReason(), err)
			}
		}
		wantMismatch(e.instance, "holding the master key")

		// Another instance, started with another master key only: the secret does not open.
		if e.keyring, err = secretbox.NewKeyring(mustKey(t)); err != nil {
			t.Fatal(err)
		}
		stale := e.start(t, e.store)
		// The right token is still answered: the handshake needs no secret.
		if resp, err := handshake(stale, token); err != nil || string(resp.GetReply().GetBody()) != "31337" {
			t.Fatalf("the right verify_token on an instance without the master key got %v, %v; want the challenge", resp, err)
		}
		logged := strings.Count(string(e.logs.Bytes()), "sealed under a master key")
		wantMismatch(stale, "without the master key")
		if n := strings.Count(string(e.logs.Bytes()), "sealed under a master key"); n != logged {
			t.Errorf("a wrong verify_token logged that a secret is sealed under a missing master key")
		}
	})
}
