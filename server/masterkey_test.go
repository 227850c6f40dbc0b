package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
)

// An instance that does not hold the master key a currently valid secret is sealed under (the
// runbook's step 1 before every instance has restarted, or a restart with the new key alone
// before rekey finished) cannot tell whether a delivery it cannot authenticate was signed with
// that secret. It must not answer SIGNATURE_MISMATCH (401): PagerDuty and Okta drop a 4xx for
// good, so a genuine event would be lost for a configuration the operator fixes by restarting.
// UNAVAILABLE makes the provider retry; deliveries that a secret it can open authenticates
// are still accepted.
func TestSecretUnderUnknownMasterKeyIsUnavailableNotMismatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		oldSecret, _ := e.setup(t, p, "mk-shop")
		oldKey := e.masterKey
		oldOnly := e.keyring

		newKey := mustKey(t)
		var err error
		if e.keyring, err = secretbox.NewKeyring(newKey, oldKey); err != nil {
			t.Fatal(err)
		}
		rotated := e.start(t, e.store)
		newSecret := p.newSecret()
		if _, err := rotated.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{
			EndpointId: "mk-shop", Secret: newSecret, Overlap: durationpb.New(time.Hour)}); err != nil {
			t.Fatal(err)
		}

		e.keyring = oldOnly
		stale := e.start(t, e.store)
		// The old secret still opens here and still authenticates during the overlap.
		stale.accept(t, e.deliver(t, p, "mk-shop", eventID(p), oldSecret))
		// The new one is sealed under a key this instance lacks: retry later, not 401.
		_, err = stale.call(t, e.deliver(t, p, "mk-shop", eventID(p), newSecret))
		wantCode(t, err, codes.Unavailable)
		// Every delivery to the endpoint, forged ones too, meets this until the restart: the
		// ERROR line naming the secret is logged once per interval, not once per call.
		for range 5 {
			_, err = stale.call(t, e.deliver(t, p, "mk-shop", eventID(p), newSecret))
			wantCode(t, err, codes.Unavailable)
		}
		if n := strings.Count(string(e.logs.Bytes()), "sealed under a master key this server does not hold"); n != 1 {
			t.Fatalf("six such calls logged the ERROR %d times; want once per interval", n)
		}
		// Once restarted with both keys, the provider's retry is accepted.
		rotated.accept(t, e.deliver(t, p, "mk-shop", eventID(p), newSecret))
	})
}

// TestUnreadableSecretsAreCounted: serve warns at start when secrets in force are sealed under
// master keys the instance was not given, naming the keys; ended secrets do not count, and
// with every key given there is nothing to warn about.
func TestUnreadableSecretsAreCounted(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		e.setup(t, p, "mk-a")
		retiredID := e.addSecret(t, "mk-a", p.newSecret())
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "mk-a", SecretId: retiredID}); err != nil {
			t.Fatal(err)
		}
		oldKey := e.masterKey

		newKey := mustKey(t)
		var err error
		if e.keyring, err = secretbox.NewKeyring(newKey); err != nil {
			t.Fatal(err)
		}
		newOnly := e.start(t, e.store)
		n, keys, err := newOnly.srv.UnreadableSecrets(t.Context(), e.store)
		if err != nil {
			t.Fatal(err)
		}
		if want := secretbox.KeyID(oldKey); n != 1 || len(keys) != 1 || keys[0] != want {
			t.Fatalf("UnreadableSecrets with the new key alone = %d, %v; want 1 (the retired one does not count), [%s]", n, keys, want)
		}

		if e.keyring, err = secretbox.NewKeyring(newKey, oldKey); err != nil {
			t.Fatal(err)
		}
		both := e.start(t, e.store)
		if n, keys, err := both.srv.UnreadableSecrets(t.Context(), e.store); err != nil || n != 0 || len(keys) != 0 {
			t.Fatalf("UnreadableSecrets with both keys = %d, %v, %v; want none", n, keys, err)
		}
	})
}
