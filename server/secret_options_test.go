package server_test

import (
	"strings"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// TestOptionChangeIgnoresASecretThatNeverRead: endpoint update refuses an options change
// under which a secret that reads now would no longer read. A secret stored before secret add
// checked the key option (one pasted in the wrong form, which never matched a signature) does
// not read under the current options either: the update changes nothing for it, yet it was
// refused as if it did ("would no longer read"), for any change of options at all, a new
// header name say, until the secret was retired. Only a secret the change stops reading
// counts; one that reads now still refuses the change.
func TestOptionChangeIgnoresASecretThatNeverRead(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "legacy-form", Provider: "generic-hmac", Options: map[string]string{"key": "base64"}})
		good := e.addSecret(t, "legacy-form", "QUJDREVGR0g=")

		// Stored as secret add did before it checked the key option: not base64.
		const legacyID = "sec_000000000000000000000001"
		plain := []byte("zz-not-base64-zz")
		keyID, sealed, err := e.keyring.Seal("legacy-form", legacyID, plain)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.AddSecret(t.Context(), storage.Secret{ID: legacyID, EndpointID: "legacy-form", KeyID: keyID, Sealed: sealed,
			CreatedAt: e.clock.Now().UTC(), Fingerprint: secretbox.Fingerprint("legacy-form", plain)}); err != nil {
			t.Fatal(err)
		}

		newHeader := &hookverifyv1.Endpoint{Id: "legacy-form", Provider: "generic-hmac", Options: map[string]string{"key": "base64", "header": "X-Hub-Signature"}}
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: newHeader}); err != nil {
			t.Fatalf("an options change under which every secret reads as it did before was refused: %v", err)
		}

		// A change that stops the good secret reading is still refused, naming it alone.
		toHex := &hookverifyv1.Endpoint{Id: "legacy-form", Provider: "generic-hmac", Options: map[string]string{"key": "hex"}}
		_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: toHex})
		if err == nil || !strings.Contains(err.Error(), good) {
			t.Fatalf("a change under which the secret in use no longer reads: %v, want a refusal naming %s", err, good)
		}
		if strings.Contains(err.Error(), legacyID) {
			t.Errorf("the refusal names a secret that did not read before the change either: %v", err)
		}
	})
}
