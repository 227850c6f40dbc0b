package server_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v84/webhook"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestVerifyOfficialSDKSignatures uses the providers' official Go SDKs as oracles: deliveries
// they sign pass the whole server, and the deliveries the tests sign with protocol Sign pass
// the SDKs' own verification, so the suite's signing helper cannot share a mistake with the
// verifier.
func TestVerifyOfficialSDKSignatures(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)

		t.Run("stripe-go", func(t *testing.T) {
			p := stripeProvider
			secret, secretID := e.setup(t, p, "shop")
			id := eventID(p)
			body := p.body(id)
			sdkSigned := func(at time.Time, scheme string) *hookverifyv1.VerifyRequest {
				signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at, Scheme: scheme})
				return &hookverifyv1.VerifyRequest{
					EndpointId: "shop", Body: body, Method: "POST", Url: "https://hooks.example.com/shop",
					Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "Stripe-Signature", Value: signed.Header}},
				}
			}
			first := e.accept(t, sdkSigned(e.clock.Now(), ""))
			if first.GetEventId() != id || first.GetSecretId() != secretID {
				t.Fatalf("event %q secret %s, want %q %s", first.GetEventId(), first.GetSecretId(), id, secretID)
			}
			e.clock.Advance(time.Minute)
			e.duplicate(t, sdkSigned(e.clock.Now(), ""), first)
			e.reject(t, sdkSigned(e.clock.Now().Add(-10*time.Minute), ""), outOfTolerance)
			e.reject(t, sdkSigned(e.clock.Now(), "v0"), missingSignature)

			ours := e.deliver(t, p, "shop", id, secret)
			if err := stripewebhook.ValidatePayloadIgnoringTolerance(ours.GetBody(), header(ours, "Stripe-Signature"), secret); err != nil {
				t.Fatalf("stripe-go rejects the test helper's signature: %v", err)
			}
		})

		t.Run("standard-webhooks library", func(t *testing.T) {
			p := standardProvider
			secret, secretID := e.setup(t, p, "sw")
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			id := eventID(p)
			body := p.body(id)
			sdkSigned := func(prefix string, at time.Time) *hookverifyv1.VerifyRequest {
				sig, err := wh.Sign(id, at, body)
				if err != nil {
					t.Fatal(err)
				}
				return &hookverifyv1.VerifyRequest{
					EndpointId: "sw", Body: body, Method: "POST", Url: "https://hooks.example.com/sw",
					Headers: []*hookverifyv1.HeaderField{
						{Name: prefix + "id", Value: id},
						{Name: prefix + "timestamp", Value: strconv.FormatInt(at.Unix(), 10)},
						{Name: prefix + "signature", Value: sig},
					},
				}
			}
			first := e.accept(t, sdkSigned("webhook-", e.clock.Now()))
			if first.GetEventId() != id || first.GetSecretId() != secretID {
				t.Fatalf("event %q secret %s, want %q %s", first.GetEventId(), first.GetSecretId(), id, secretID)
			}
			e.clock.Advance(time.Minute)
			e.duplicate(t, sdkSigned("svix-", e.clock.Now()), first)
			e.reject(t, sdkSigned("webhook-", e.clock.Now().Add(10*time.Minute)), outOfTolerance)

			ours := e.deliver(t, p, "sw", id, secret)
			h := http.Header{}
			for _, f := range ours.GetHeaders() {
				h.Add(f.GetName(), f.GetValue())
			}
			if err := wh.VerifyIgnoringTimestamp(ours.GetBody(), h); err != nil {
				t.Fatalf("the standard-webhooks library rejects the test helper's signature: %v", err)
			}
		})
	})
}
