package protocol

import "testing"

const (
	sentrySecret    = "9ee2c2c1b7b25b4bc1f2b3d0f3b0b6d3a1f0c2e4d6b8a0c2e4f6a8b0c2d4e6f8"
	sentrySecretNew = "1f3e5d7c9b0a2f4e6d8c0b1a3f5e7d9c1b3a5f7e9d0c2b4a6f8e0d2c4b6a8f0e"
	sentryRequestID = "f0b7a3d6-8c1e-4f2a-9b5d-3e7c1a9f4b2d"
	sentryBody      = `{"action":"created","installation":{"uuid":"7a485448-a9e2-4c85-8a3c-4f44175783c9"},"data":{"issue":{"id":"1170820242"}},"actor":{"type":"application","id":"sentry","name":"Sentry"}}`
)

func TestSentryVerify(t *testing.T) {
	t.Parallel()
	p := Sentry()
	in := SignInput{Body: []byte(sentryBody), EventID: sentryRequestID}
	good := signed(t, p, in, sentrySecret)
	indep := hmacSHA256Hex(sentrySecret, sentryBody)
	bodyID := bodySHA256ID([]byte(sentryBody))
	emptyBody := signed(t, p, SignInput{Body: nil, EventID: sentryRequestID}, sentrySecret)
	fx := signingFixture{
		p: p, secret: sentrySecret, secretNew: sentrySecretNew, in: in, wantEvent: bodyID,
		sigHeader: "Sentry-Hook-Signature",
		noID:      withoutHeader(emptyBody, "Request-ID"),
		malformed: []string{"garbage", "sha256=" + indep, indep[:62], indep + "00"},
	}
	cs := fx.cases(t)
	legacy := withoutHeader(withHeader(good, "Sentry-App-Signature", indep), "Sentry-Hook-Signature")
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "Sentry-Hook-Signature", indep), keys: []string{sentrySecret}, wantKey: "k0", wantEvent: bodyID},
		verifyCase{name: "legacy Sentry-App-Signature accepted", req: legacy, keys: []string{sentrySecret}, wantKey: "k0", wantEvent: bodyID},
		verifyCase{name: "new header preferred over legacy", req: withHeader(good, "Sentry-App-Signature", hmacSHA256Hex("other", sentryBody)), keys: []string{sentrySecret}, wantKey: "k0", wantEvent: bodyID},
		verifyCase{name: "empty new header falls back to legacy", req: withHeader(legacy, "Sentry-Hook-Signature", ""), keys: []string{sentrySecret}, wantKey: "k0", wantEvent: bodyID},
		verifyCase{name: "empty body signed as the empty string", req: signed(t, p, SignInput{Body: nil, EventID: sentryRequestID}, sentrySecret), keys: []string{sentrySecret}, wantKey: "k0", wantEvent: sentryRequestID},
		verifyCase{name: "empty body signed as {} is rejected", req: withHeader(signed(t, p, SignInput{Body: nil, EventID: sentryRequestID}, sentrySecret), "Sentry-Hook-Signature", hmacSHA256Hex(sentrySecret, "{}")), keys: []string{sentrySecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "empty body, empty Request-ID", req: withHeader(emptyBody, "Request-ID", ""), keys: []string{sentrySecret}, wantReason: ReasonMissingEventID},
		// Sentry draws a new Request-ID for every send, retries included: a retry keeps the body's identity.
		verifyCase{name: "a retry's new Request-ID keeps the identity", req: withHeader(good, "Request-ID", "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70"), keys: []string{sentrySecret}, wantKey: "k0", wantEvent: bodyID},
	)
	runVerifyCases(t, p, cs)
}

// TestSentryDocumentedAlgorithm pins Sign to the official example's construction
// (hmac.new(client_secret, body, sha256).hexdigest() in getsentry/integration-platform-example
// verify_sentry_signature.py; Sentry publishes no fixed vector), computed with openssl:
// printf '%s' "$sentryBody" | openssl dgst -sha256 -hmac "$sentrySecret"
func TestSentryDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Sentry().Sign(SignInput{Body: []byte(sentryBody), EventID: sentryRequestID}, []string{sentrySecret})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "Sentry-Hook-Signature"); got != sentryOpenSSL {
		t.Fatalf("Sentry-Hook-Signature = %q, want %q", got, sentryOpenSSL)
	}
}

func FuzzSentrySignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Sentry(), sentrySecret, "Sentry-Hook-Signature",
		SignInput{Body: []byte(sentryBody), EventID: sentryRequestID}, Params{Now: fixedNow},
		"", "sha256=00", "ABCDEF")
}

const sentryOpenSSL = "7dcd6273c0aa2aeb0bd7a71a71325799074d96adb610b5e1275497943123e07f"
