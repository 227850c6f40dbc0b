package server_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// TestSecretPastedAsAnIDIsNeverRepeated: what gets pasted as a secret id (or endpoint id)
// by mistake is often the secret itself; no answer or log line may repeat it.
func TestSecretPastedAsAnIDIsNeverRepeated(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		secret, _ := e.setup(t, p, "paste-shop")
		calls := []func() error{
			func() error {
				_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "paste-shop", SecretId: secret})
				return err
			},
			func() error {
				_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "no-such", SecretId: secret})
				return err
			},
			func() error {
				_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "paste-shop", SecretId: secret + "\x00"})
				return err
			},
			func() error {
				_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "paste-shop", SecretId: secret + "\xff"})
				return err
			},
		}
		for i, call := range calls {
			if err := call(); err == nil {
				t.Errorf("call %d succeeded", i)
			} else {
				t.Logf("call %d: %v", i, err)
			}
		}
		for place, data := range map[string][]byte{"the log": e.logs.Bytes(), "the responses": e.transcript.Bytes()} {
			for form, needle := range secretForms(secret) {
				if bytes.Contains(data, needle) {
					t.Errorf("the secret (%s) is in %s", form, place)
				}
			}
		}
	})
}

// failingReseals is a store whose ResealSecret fails (storage down) after ok successful calls.
type failingReseals struct {
	storage.Store
	mu sync.Mutex
	ok int
}

func (f *failingReseals) ResealSecret(ctx context.Context, endpointID, secretID, fromKeyID, toKeyID string, sealed []byte) (bool, error) {
	f.mu.Lock()
	if f.ok == 0 {
		f.mu.Unlock()
		return false, fmt.Errorf("disk gone: %w", storage.ErrUnavailable)
	}
	f.ok--
	f.mu.Unlock()
	return f.Store.ResealSecret(ctx, endpointID, secretID, fromKeyID, toKeyID, sealed)
}

// TestRekeyCrashAndConcurrency: a rekey that fails midway leaves every secret readable
// with the old and new keys (runbook step 1's configuration); two rekeys at once, page by
// page, finish it with each secret resealed exactly once; then the new key alone opens every
// secret in force, and nothing is left for rekey to do.
func TestRekeyCrashAndConcurrency(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		type live struct{ endpoint, secret, id string }
		var lives []live
		for i := range 4 {
			endpoint := fmt.Sprintf("rk-%d", i)
			s, id := e.setup(t, p, endpoint)
			lives = append(lives, live{endpoint, s, id})
			retired := e.addSecret(t, endpoint, p.newSecret())
			if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: endpoint, SecretId: retired}); err != nil {
				t.Fatal(err)
			}
		}
		oldKey, newKey := e.masterKey, mustKey(t)
		var err error
		if e.keyring, err = secretbox.NewKeyring(newKey, oldKey); err != nil {
			t.Fatal(err)
		}
		failing := e.start(t, &failingReseals{Store: e.store, ok: 3})
		_, err = failing.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{MaxSecrets: 1000})
		wantCode(t, err, codes.Unavailable)

		both := e.start(t, e.store)
		for _, l := range lives {
			if got := both.accept(t, e.deliver(t, p, l.endpoint, eventID(p), l.secret)).GetSecretId(); got != l.id {
				t.Fatalf("after a failed rekey: secret_id %s, want %s", got, l.id)
			}
		}

		other := e.start(t, e.store)
		var wg sync.WaitGroup
		for _, in := range []*instance{both, other} {
			wg.Go(func() {
				for range 100 {
					resp, err := in.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{MaxSecrets: 1})
					if err != nil {
						t.Errorf("RekeySecrets: %v", err)
						return
					}
					if len(resp.GetUnreadableSecretIds())+len(resp.GetEndedUnreadableSecretIds()) > 0 {
						t.Errorf("RekeySecrets found unreadable secrets: %v", resp)
					}
					if resp.GetRemaining() == 0 {
						return
					}
				}
				t.Error("rekey did not finish")
			})
		}
		wg.Wait()

		events, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		rekeyed := map[string]int{}
		for _, ev := range events.GetEvents() {
			if ev.GetAction() == "secret.rekey" {
				rekeyed[ev.GetSecretId()]++
			}
		}
		if len(rekeyed) != 2*len(lives) {
			t.Errorf("%d secrets rekeyed in the audit trail, want %d: %v", len(rekeyed), 2*len(lives), rekeyed)
		}
		for id, n := range rekeyed {
			if n != 1 {
				t.Errorf("secret %s rekeyed %d times", id, n)
			}
		}

		if e.keyring, err = secretbox.NewKeyring(newKey); err != nil {
			t.Fatal(err)
		}
		newOnly := e.start(t, e.store)
		for _, l := range lives {
			if got := newOnly.accept(t, e.deliver(t, p, l.endpoint, eventID(p), l.secret)).GetSecretId(); got != l.id {
				t.Fatalf("new key alone: secret_id %s, want %s", got, l.id)
			}
		}
		resp, err := newOnly.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{})
		if err != nil || resp.GetResealed() != 0 || resp.GetRemaining() != 0 || len(resp.GetUnreadableSecretIds())+len(resp.GetEndedUnreadableSecretIds()) != 0 {
			t.Fatalf("RekeySecrets after the rotation = %v, %v; want nothing to do", resp, err)
		}
	})
}

// TestSecretWindowBoundaries: to the microsecond, a secret authenticates from its
// not_before (included) to its not_after or retirement (excluded), and each accepted delivery
// names the secret that signed it.
func TestSecretWindowBoundaries(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		always, alwaysID := e.setup(t, p, "bounds")
		windowed := p.newSecret()
		start := e.clock.Now().Add(10 * time.Microsecond)
		resp, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "bounds", Secret: windowed,
			NotBefore: timestamppb.New(start), NotAfter: timestamppb.New(start.Add(10 * time.Microsecond))})
		if err != nil {
			t.Fatal(err)
		}
		windowedID := resp.GetSecret().GetId()
		at := func(d time.Duration) {
			t.Helper()
			e.clock.mu.Lock()
			e.clock.now = start.Add(d)
			e.clock.mu.Unlock()
		}
		by := func(secret, id string) {
			t.Helper()
			if got := e.accept(t, e.deliver(t, p, "bounds", eventID(p), secret)).GetSecretId(); got != id {
				t.Fatalf("at %v: secret_id %s, want %s", e.clock.Now().Sub(start), got, id)
			}
		}
		early := func() {
			t.Helper()
			_, err := e.call(t, e.deliver(t, p, "bounds", eventID(p), windowed))
			wantCode(t, err, codes.Unavailable)
		}
		at(-time.Microsecond)
		early()
		by(always, alwaysID)
		at(0)
		by(windowed, windowedID)
		by(always, alwaysID)
		at(10*time.Microsecond - time.Microsecond)
		by(windowed, windowedID)
		at(10 * time.Microsecond)
		e.reject(t, e.deliver(t, p, "bounds", eventID(p), windowed), mismatch)
		by(always, alwaysID)

		// Retirement: refused from the instant it is recorded.
		at(20 * time.Microsecond)
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "bounds", SecretId: alwaysID}); err != nil {
			t.Fatal(err)
		}
		_, err = e.call(t, e.deliver(t, p, "bounds", eventID(p), always))
		wantCode(t, err, codes.Unavailable) // no secret valid now
	})
}
