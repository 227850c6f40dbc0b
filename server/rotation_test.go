package server_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// A secret that has ended (retired, or past its overlap) never authenticates again, so a lost
// master key it is sealed under loses nothing: rekey lists it apart (endedUnreadableSecretIds),
// serve's start-up check leaves it out and README says it needs nothing. Verification must not
// try to open it either: it did, on every load of the endpoint (each --cache-ttl on a busy
// endpoint), and logged "secret does not open" at ERROR each time, for ever, a page for the
// on-call that needs no action and that drowns the one that does.
func TestEndedSecretUnderLostMasterKeyIsNotOpened(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		_, oldID := e.setup(t, p, "lost-key")
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "lost-key", SecretId: oldID}); err != nil {
			t.Fatal(err)
		}

		// The old master key is lost: the instance starts with a new one alone, and the
		// endpoint gets a secret under it. Every call loads the endpoint (no cache), as a
		// busy endpoint does once per TTL.
		var err error
		if e.keyring, err = secretbox.NewKeyring(mustKey(t)); err != nil {
			t.Fatal(err)
		}
		e.options = func(o *server.Options) { o.CacheTTL = -1 }
		newKey := e.start(t, e.store)
		secret := p.newSecret()
		newKey.addSecret(t, "lost-key", secret)
		before := len(e.logs.Bytes())
		for range 3 {
			newKey.accept(t, e.deliver(t, p, "lost-key", eventID(p), secret))
		}
		if logs := string(e.logs.Bytes()[before:]); strings.Contains(logs, "secret does not open") {
			t.Fatalf("a retired secret under a lost master key was opened and logged on every load:\n%s", logs)
		}
	})
}

// README's switch at a known time: `secret add --not-before T` while the old secret stays
// valid. A provider that starts signing with the new secret a little before T (its clock, or
// the operator setting it at the provider early) sends deliveries that only a secret this
// server holds could have signed. They were answered SIGNATURE_MISMATCH, a 401, which
// PagerDuty and Okta drop for good, and with nothing to tell the operator why: a genuine
// event lost to a schedule. Such a delivery is now UNAVAILABLE (nothing is accepted before T,
// the provider retries and is accepted from T on) and the log names the secret and its start;
// a forgery is still a mismatch.
func TestDeliverySignedWithAScheduledSecretIsRetriedNotRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		old, oldID := e.setup(t, p, "switch")
		next := p.newSecret()
		start := e.clock.Now().Add(time.Hour)
		added, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "switch", Secret: next, NotBefore: timestamppb.New(start)})
		if err != nil {
			t.Fatal(err)
		}
		if resp := e.accept(t, e.deliver(t, p, "switch", eventID(p), old)); resp.GetSecretId() != oldID {
			t.Fatalf("secret_id %s, want the old secret %s", resp.GetSecretId(), oldID)
		}

		early := eventID(p)
		_, err = e.call(t, e.deliver(t, p, "switch", early, next))
		wantCode(t, err, codes.Unavailable)
		if n := e.count(t); n != 1 {
			t.Fatalf("%d deliveries stored; the early one must not be", n)
		}
		if logs := string(e.logs.Bytes()); !strings.Contains(logs, added.GetSecret().GetId()) || !strings.Contains(logs, "scheduled") {
			t.Errorf("the log does not name the scheduled secret the delivery was signed with:\n%s", logs)
		}
		e.reject(t, e.deliver(t, p, "switch", eventID(p), p.newSecret()), mismatch)

		// From its start, the provider's retry is accepted.
		e.clock.Advance(time.Hour)
		if resp := e.accept(t, e.deliver(t, p, "switch", early, next)); resp.GetSecretId() != added.GetSecret().GetId() {
			t.Fatalf("secret_id %s, want the scheduled secret %s", resp.GetSecretId(), added.GetSecret().GetId())
		}
	})
}

// A generic-hmac endpoint's key option says how a secret becomes the HMAC key (hex, base64,
// whsec). A secret that does not decode that way can never match a signature, yet it was
// stored, so a rotation to it looked done: the old secret ended after the overlap, and from
// then on every delivery was SIGNATURE_MISMATCH, all for a paste in the wrong form. The
// endpoint's options are known when the secret is added or rotated in, so it is refused
// then, with the option named and the secret not quoted.
func TestGenericHMACSecretThatDoesNotDecodeIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, tc := range []struct{ key, good, bad string }{
			{"hex", "00112233445566778899aabbccddeeff", "whsec_MDAxMTIyMzM0NDU1NjY3Nw=="},
			{"base64", "MDAxMTIyMzM0NDU1NjY3Nzg4OTlhYWJi", "zz-not-base64-zz"},
			{"whsec", "whsec_MDAxMTIyMzM0NDU1NjY3Nzg4OTlhYWJi", "whsec_zz-not-base64-zz"},
		} {
			endpoint := "generic-key-" + tc.key
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: endpoint, Provider: "generic-hmac", Options: map[string]string{"key": tc.key}})
			e.addSecret(t, endpoint, tc.good)
			_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: endpoint, Secret: tc.bad})
			wantCode(t, err, codes.InvalidArgument)
			if msg := err.Error(); strings.Contains(msg, tc.bad) || !strings.Contains(msg, "key") {
				t.Errorf("key=%s: the refusal should name the option and never quote the secret: %v", tc.key, err)
			}
			_, err = e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: endpoint, Secret: tc.bad})
			wantCode(t, err, codes.InvalidArgument)
			// The secret in force is untouched by the refused rotation.
			wantStates(t, e, endpoint, stateActive)
		}
	})
}

// Rotation runbook step 4 watches hookverify_secret_verifications_total move from the old
// secret's id to the new one's. A counter series that first appears at 1 is invisible to
// rate() and increase() (they need a sample before the rise), so on an endpoint with little
// traffic the new secret's first deliveries on each instance never showed as traffic moving
// to it. Every secret in force or scheduled is exported at 0 once its endpoint is loaded, as
// the alerted counters are (TestAlertedCountersStartAtZero); ended ones are not.
func TestSecretVerificationSeriesStartAtZero(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		m := server.NewMetrics()
		e.options = func(o *server.Options) { o.Metrics = m }
		in := e.start(t, e.store)
		p := stripeProvider
		old, oldID := in.setup(t, p, "series")
		retiredID := in.addSecret(t, "series", p.newSecret())
		if _, err := in.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "series", SecretId: retiredID}); err != nil {
			t.Fatal(err)
		}
		rotated, err := in.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "series", Secret: p.newSecret(), Overlap: durationpb.New(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		newID := rotated.GetSecret().GetId()
		in.accept(t, e.deliver(t, p, "series", eventID(p), old))

		got := secretUses(t, m)
		if v, ok := got[newID]; !ok || v != 0 {
			t.Errorf("the new secret's series = %g (exported: %v), want 0 before its first use; all: %v", v, ok, got)
		}
		if got[oldID] != 1 {
			t.Errorf("the old secret's series = %g, want 1; all: %v", got[oldID], got)
		}
		if _, ok := got[retiredID]; ok {
			t.Errorf("a retired secret's series is exported: %v", got)
		}
	})
}

// TestOptionChangeThatUnreadsASecretIsRefused: secret add refuses a generic-hmac secret the
// endpoint's key option cannot decode, but endpoint update could change the key option under
// a secret in force (base64 to hex, say): accepted, and every genuine delivery was a signature
// mismatch from then on, lost by a provider that drops 401s. The update is refused, naming
// the secrets; an update that leaves the options as they are, or one made once the secret is
// retired, goes through.
func TestOptionChangeThatUnreadsASecretIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		endpoint := &hookverifyv1.Endpoint{Id: "generic-form", Provider: "generic-hmac", Options: map[string]string{"key": "base64"}}
		e.createEndpoint(t, endpoint)
		secretID := e.addSecret(t, "generic-form", "QUJDREVGR0g=")

		toHex := &hookverifyv1.Endpoint{Id: "generic-form", Provider: "generic-hmac", Options: map[string]string{"key": "hex"}}
		_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: toHex})
		wantCode(t, err, codes.InvalidArgument)
		if !strings.Contains(err.Error(), secretID) || strings.Contains(err.Error(), "QUJDREVGR0g=") {
			t.Errorf("the refusal should name the secret's id and never quote it: %v", err)
		}
		same := &hookverifyv1.Endpoint{Id: "generic-form", Provider: "generic-hmac", Options: map[string]string{"key": "base64"}, Disabled: true}
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: same}); err != nil {
			t.Fatalf("an update keeping the options: %v", err)
		}
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "generic-form", SecretId: secretID}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: toHex}); err != nil {
			t.Fatalf("the same option change once the secret is retired: %v", err)
		}
	})
}

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
