package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
			CreatedAt: e.clock.Now().UTC(), Fingerprint: secretbox.Fingerprint("legacy-form", plain)}, nil); err != nil {
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

// TestOptionChangeRefusedWhenASecretWouldReadAsAnotherKey: most hex text is base64 too (of
// other bytes), and every secret is raw text: an update from key=hex to key=base64 or raw read
// the secret in use as another key, passed the check (the secret still read as something), and
// every delivery after it was refused as SIGNATURE_MISMATCH. A secret that has authenticated
// nothing yet may be read wrongly now (key=raw, the default, for a secret the provider
// hex-decodes): the change may be its fix, and goes. So does a change under which every secret
// reads as the same key (base64 to whsec, for a secret without the whsec_ prefix).
func TestOptionChangeRefusedWhenASecretWouldReadAsAnotherKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		endpoint := func(id, key string) *hookverifyv1.Endpoint {
			return &hookverifyv1.Endpoint{Id: id, Provider: "generic-hmac", Options: map[string]string{"key": key}}
		}
		e.createEndpoint(t, endpoint("hex-key", "hex"))
		inUse := e.addSecret(t, "hex-key", "abcd1234") // also base64 (of 6 other bytes), and raw text
		if err := e.store.MarkSecretsUsed(t.Context(), []storage.SecretUse{{EndpointID: "hex-key", SecretID: inUse, At: e.clock.Now()}}); err != nil {
			t.Fatal(err)
		}
		for _, to := range []string{"base64", "raw"} {
			_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: endpoint("hex-key", to)})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), inUse) {
				t.Errorf("key=hex to key=%s, under which %s reads as another key: %v; want INVALID_ARGUMENT naming it", to, inUse, err)
			}
		}
		got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "hex-key"})
		if err != nil || got.GetEndpoint().GetOptions()["key"] != "hex" {
			t.Errorf("after the refusals: %v, %v; want the key option still hex", got, err)
		}

		// Never used: the default key=raw for a secret the provider hex-decodes is fixed.
		e.createEndpoint(t, endpoint("raw-key", "raw"))
		e.addSecret(t, "raw-key", "abcd1234")
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: endpoint("raw-key", "hex")}); err != nil {
			t.Errorf("key=raw to key=hex for a secret that never authenticated a delivery: %v", err)
		}

		e.createEndpoint(t, endpoint("b64-key", "base64"))
		e.addSecret(t, "b64-key", "QUJDREVGR0g=")
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: endpoint("b64-key", "whsec")}); err != nil {
			t.Errorf("key=base64 to key=whsec, under which the secret reads as the same key: %v", err)
		}
	})
}

// secretWindowStore lands a concurrent call, once, just before the first write of an endpoint
// change or a secret (ModifyEndpoint, AddSecret, RotateSecret): after every check the server
// makes on its own reads, before the store's transaction.
type secretWindowStore struct {
	storage.Store
	armed atomic.Bool
	hook  func()
}

func (s *secretWindowStore) fire() {
	if s.armed.CompareAndSwap(true, false) {
		s.hook()
	}
}

func (s *secretWindowStore) ModifyEndpoint(ctx context.Context, id string, change storage.EndpointChange) (storage.Endpoint, error) {
	s.fire()
	return s.Store.ModifyEndpoint(ctx, id, change)
}

func (s *secretWindowStore) AddSecret(ctx context.Context, sec storage.Secret, check storage.SecretCheck) error {
	s.fire()
	return s.Store.AddSecret(ctx, sec, check)
}

func (s *secretWindowStore) RotateSecret(ctx context.Context, sec storage.Secret, expireAt time.Time, check storage.SecretCheck) ([]storage.Secret, error) {
	s.fire()
	return s.Store.RotateSecret(ctx, sec, expireAt, check)
}

// TestKeyFormChangeAndSecretAddAtOnce: an endpoint update that changes generic-hmac's key form
// and a secret added or rotated in the old form at the same time. Each checked the other
// against what it had read before its own write: the update found no secret that would stop
// reading, the secret read as a key under the options it had read, and both succeeded,
// leaving a secret in force that never matches (after a rotation, the only one). Now each is
// judged in its transaction on what the other stored, so one of the two is refused.
func TestKeyFormChangeAndSecretAddAtOnce(t *testing.T) {
	const base64Secret = "QUJDREVGR0g=" // reads under key=base64, not under key=hex
	toHex := &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "hmac", Provider: "generic-hmac",
		Options: map[string]string{"key": "hex"}}}
	storeWays := map[string]func(admin hookverifyv1.AdminServiceClient) error{
		"add": func(admin hookverifyv1.AdminServiceClient) error {
			_, err := admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "hmac", Secret: base64Secret})
			return err
		},
		"rotate": func(admin hookverifyv1.AdminServiceClient) error {
			_, err := admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "hmac", Secret: base64Secret})
			return err
		},
	}
	for way, storeSecret := range storeWays {
		for _, first := range []string{"update", way} {
			t.Run(way+", "+first+" lands in the other's window", func(t *testing.T) {
				eachBackend(t, func(t *testing.T, b backend) {
					dsn := b.newDatabase(t)
					st := &secretWindowStore{Store: openStore(t, b, dsn)}
					e := newEnvOn(t, b, dsn, st)
					e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "hmac", Provider: "generic-hmac", Options: map[string]string{"key": "base64"}})
					update := func() error {
						_, err := e.admin.UpdateEndpoint(t.Context(), toHex)
						return err
					}
					var inWindow error
					outer, inner := update, func() error { return storeSecret(e.admin) }
					if first == "update" {
						outer, inner = inner, outer
					}
					st.hook = func() { inWindow = inner() }
					st.armed.Store(true)
					outerErr := outer()
					if st.armed.Load() {
						t.Fatal("the concurrent call never ran")
					}
					for what, err := range map[string]error{"in the window": inWindow, "around it": outerErr} {
						if err != nil && status.Code(err) != codes.InvalidArgument {
							t.Fatalf("the call %s: %v", what, err)
						}
					}
					if inWindow != nil || outerErr == nil {
						t.Fatalf("the call in the window: %v; the one around it: %v; want the first made and the other refused", inWindow, outerErr)
					}
					got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "hmac"})
					if err != nil {
						t.Fatal(err)
					}
					secrets, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "hmac"})
					if err != nil {
						t.Fatal(err)
					}
					wantKey, wantSecrets := "hex", 0
					if first == way {
						wantKey, wantSecrets = "base64", 1
					}
					if got.GetEndpoint().GetOptions()["key"] != wantKey || len(secrets.GetSecrets()) != wantSecrets {
						t.Errorf("after the %s first: key %q and %d secrets, want key %q and %d", first,
							got.GetEndpoint().GetOptions()["key"], len(secrets.GetSecrets()), wantKey, wantSecrets)
					}
				})
			})
		}
	}
}
