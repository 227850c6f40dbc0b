package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestEndpointWithoutAValidSecretIsUnavailable: a delivery to an endpoint that has no secret
// valid now (none added yet, only one that starts later, every one retired) can be neither
// authenticated nor refuted. Answered SIGNATURE_MISMATCH, it got a 401, on which PagerDuty and
// Okta drop the event for good (PagerDuty also disables the subscription after three): the
// events a provider sends between showing its new secret and the operator adding it here were
// lost. UNAVAILABLE makes the provider retry until the secret is in; a delivery without any
// signature is still rejected, and the log says what is missing.
func TestEndpointWithoutAValidSecretIsUnavailable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "ns-shop", Provider: p.name})
		secret := p.newSecret()
		delivery := e.deliver(t, p, "ns-shop", eventID(p), secret)

		_, err := e.call(t, delivery)
		wantCode(t, err, codes.Unavailable)
		unsigned := e.deliver(t, p, "ns-shop", eventID(p), secret)
		unsigned.Headers = nil
		e.reject(t, unsigned, hookverifyv1.RejectReason_REJECT_REASON_MISSING_SIGNATURE)
		if !strings.Contains(string(e.logs.Bytes()), "no secret valid now") {
			t.Errorf("the log does not say the endpoint has no secret valid now:\n%s", string(e.logs.Bytes()))
		}

		// A secret that starts later: still nothing to authenticate with now.
		if _, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "ns-shop", Secret: secret,
			NotBefore: timestamppb.New(e.clock.Now().Add(time.Hour))}); err != nil {
			t.Fatal(err)
		}
		_, err = e.call(t, delivery)
		wantCode(t, err, codes.Unavailable)

		// Once it is valid, the provider's retry is accepted.
		e.clock.Advance(time.Hour + time.Second)
		e.accept(t, e.deliver(t, p, "ns-shop", eventID(p), secret))

		// With a secret valid, a wrong signature is a forgery again.
		e.reject(t, e.deliver(t, p, "ns-shop", eventID(p), p.newSecret()), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)
	})
}
