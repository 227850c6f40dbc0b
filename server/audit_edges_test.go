package server_test

import (
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// TestSecretStoredWithoutAFingerprintIsListedWithOne proves that a secret stored before
// fingerprints existed (no fingerprint in its row) is still listed with the fingerprint its
// holder can compute, opened with the master key that sealed it, and that one whose key this
// server does not hold is listed without a fingerprint rather than failing the listing.
func TestSecretStoredWithoutAFingerprintIsListedWithOne(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "old", Provider: "github"})
		const oldID, lostID = "sec_000000000000000000000001", "sec_000000000000000000000002"
		plain := []byte(githubProvider.newSecret())
		keyID, sealed, err := e.keyring.Seal("old", oldID, plain)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.AddSecret(t.Context(), storage.Secret{ID: oldID, EndpointID: "old", KeyID: keyID, Sealed: sealed,
			CreatedAt: e.clock.Now().UTC()}, nil); err != nil {
			t.Fatal(err)
		}
		// Sealed under a master key this server was never given.
		_, other := mustKeyring(t)
		otherKey, otherSealed, err := other.Seal("old", lostID, []byte(githubProvider.newSecret()))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.AddSecret(t.Context(), storage.Secret{ID: lostID, EndpointID: "old", KeyID: otherKey, Sealed: otherSealed,
			CreatedAt: e.clock.Now().UTC()}, nil); err != nil {
			t.Fatal(err)
		}

		resp, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "old"})
		if err != nil {
			t.Fatalf("ListSecrets: %v", err)
		}
		got := map[string]string{}
		for _, s := range resp.GetSecrets() {
			got[s.GetId()] = s.GetFingerprint()
		}
		if want := secretbox.Fingerprint("old", plain); got[oldID] != want {
			t.Fatalf("secret stored without a fingerprint is listed with %q, want %q", got[oldID], want)
		}
		if fp, ok := got[lostID]; !ok || fp != "" {
			t.Fatalf("secret under a master key not held is listed with fingerprint %q (listed: %t), want none", fp, ok)
		}
	})
}
