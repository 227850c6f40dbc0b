package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
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

		got := map[string]float64{}
		families, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "hookverify_secret_verifications_total" {
				continue
			}
			for _, series := range f.GetMetric() {
				for _, l := range series.GetLabel() {
					if l.GetName() == "secret_id" {
						got[l.GetValue()] = series.GetCounter().GetValue()
					}
				}
			}
		}
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
