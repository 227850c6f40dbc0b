package server_test

import (
	"strings"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// TestStoredSecretThatDoesNotParseIsSkippedAndNotQuoted: a stored secret its provider cannot
// parse (here a Stripe secret with trailing whitespace, which secret add refuses; a row from
// before a check, or damaged) authenticates nothing and is skipped: the endpoint's other
// secret still verifies, and a delivery no secret matches is a signature mismatch, not
// UNAVAILABLE (as for a secret under a master key this server lacks, which might have
// matched): no key will ever verify it, so the provider must not retry it for ever. The error
// logged names the secret, never its text.
func TestStoredSecretThatDoesNotParseIsSkippedAndNotQuoted(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		good, _ := e.setup(t, p, "unparsed")
		const badID = "sec_000000000000000000000009"
		plain := "whsec_bad-secret-text-with-trailing-space "
		keyID, sealed, err := e.keyring.Seal("unparsed", badID, []byte(plain))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.AddSecret(t.Context(), storage.Secret{ID: badID, EndpointID: "unparsed", KeyID: keyID, Sealed: sealed,
			CreatedAt: e.clock.Now().UTC()}, nil); err != nil {
			t.Fatal(err)
		}
		e.accept(t, e.deliver(t, p, "unparsed", eventID(p), good))
		e.reject(t, e.deliver(t, p, "unparsed", eventID(p), p.newSecret()), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)
		logs := e.logs.String()
		if !strings.Contains(logs, "stored secret does not parse") || !strings.Contains(logs, badID) {
			t.Errorf("no error naming the secret that does not parse:\n%s", logs)
		}
		if strings.Contains(logs, strings.TrimSpace(plain)) {
			t.Errorf("the log quotes the stored secret:\n%s", logs)
		}
	})
}
