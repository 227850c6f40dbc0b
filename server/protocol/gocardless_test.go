package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// The published vector: gocardless/gocardless-pro-ruby spec/webhook_spec.rb (the same body,
// secret and signature appear in the other official SDKs' webhook tests).
const (
	gocardlessVectorSecret = "ED7D658C-D8EB-4941-948B-3973214F2D49"
	gocardlessVectorBody   = `{"events":[{"id":"EV00BD05S5VM2T","created_at":"2018-07-05T09:13:51.404Z","resource_type":"subscriptions","action":"created","links":{"subscription":"SB0003JJQ2MR06"},"details":{"origin":"api","cause":"subscription_created","description":"Subscription created via the API."},"metadata":{}},{"id":"EV00BD05TB8K63","created_at":"2018-07-05T09:13:56.893Z","resource_type":"mandates","action":"created","links":{"mandate":"MD000AMA19XGEC"},"details":{"origin":"api","cause":"mandate_created","description":"Mandate created via the API."},"metadata":{}}]}`
	gocardlessVectorSig    = "2693754819d3e32d7e8fcb13c729631f316c6de8dc1cf634d6527f1c07276e7e"
	gocardlessSecret       = "gc-test-webhook-secret-0001"
	gocardlessSecret2      = "gc-test-webhook-secret-0002"
)

func gocardlessSigned(t testing.TB, body, secret string) *Request {
	t.Helper()
	return signed(t, GoCardless(), SignInput{Body: []byte(body)}, secret)
}

func TestGoCardlessVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: GoCardless(), secret: gocardlessSecret, secret2: gocardlessSecret2,
		sigHeader: "Webhook-Signature", eventID: "EV0001TEST", wantEventID: "EV0001TEST",
		malformed: []string{"", "zz", strings.ToUpper(gocardlessVectorSig), "sha256=" + gocardlessVectorSig, gocardlessVectorSig[:62]},
		noIdentity: func(t *testing.T) *Request {
			return gocardlessSigned(t, `{"events":[{"created_at":"2018-07-05T09:13:51.404Z"}]}`, gocardlessSecret)
		},
	}.run(t)
}

func TestGoCardlessIdentity(t *testing.T) {
	t.Parallel()
	p := GoCardless()
	for _, tc := range []struct {
		name, body string
		wantID     string
		wantReason Reason
	}{
		{name: "two events joined in order", body: `{"events":[{"id":"EV2"},{"id":"EV1"}]}`, wantID: "EV2,EV1"},
		{name: "one event", body: `{"events":[{"id":"EV1","action":"created"}]}`, wantID: "EV1"},
		{name: "no events field", body: `{"id":"EV1"}`, wantReason: ReasonMissingEventID},
		{name: "empty events", body: `{"events":[]}`, wantReason: ReasonMissingEventID},
		{name: "events not an array", body: `{"events":{"id":"EV1"}}`, wantReason: ReasonMissingEventID},
		{name: "one event without id", body: `{"events":[{"id":"EV1"},{}]}`, wantReason: ReasonMissingEventID},
		{name: "numeric id", body: `{"events":[{"id":1}]}`, wantReason: ReasonMissingEventID},
		{name: "id with a comma", body: `{"events":[{"id":"EV1,EV2"}]}`, wantReason: ReasonMissingEventID},
		{name: "long batch is hashed", body: `{"events":[` + strings.Repeat(`{"id":"EV00BD05S5VM2T"},`, 30) + `{"id":"EVLAST"}]}`, wantID: "events-sha256:" + gocardlessIDsHash(strings.Repeat("EV00BD05S5VM2T,", 30)+"EVLAST")},
		{name: "not JSON", body: `events=EV1`, wantReason: ReasonMalformedPayload},
		{name: "JSON array", body: `[{"id":"EV1"}]`, wantReason: ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := gocardlessSigned(t, tc.body, gocardlessSecret)
			res, err := p.Verify(req, keysFor(t, p, gocardlessSecret), Params{})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
			if tc.wantReason == 0 && res.EventID != tc.wantID {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantID)
			}
		})
	}
}

func gocardlessIDsHash(joined string) string {
	sum := sha256.Sum256([]byte(joined))
	return hex.EncodeToString(sum[:])
}

func TestGoCardlessPublishedVector(t *testing.T) {
	t.Parallel()
	p := GoCardless()
	req := &Request{Method: "POST", Headers: Headers{{Name: "Webhook-Signature", Value: gocardlessVectorSig}}, Body: []byte(gocardlessVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, gocardlessVectorSecret), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "EV00BD05S5VM2T,EV00BD05TB8K63" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	// The SDK spec's negative case: the secret "foo" does not verify.
	res, err = p.Verify(req, keysFor(t, p, "foo"), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(gocardlessVectorBody)}, []string{gocardlessVectorSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("Webhook-Signature"); got != gocardlessVectorSig {
		t.Fatalf("Sign = %q, want %q", got, gocardlessVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret ")
}

func FuzzGoCardlessSignatureHeader(f *testing.F) {
	f.Add(gocardlessVectorSig, []byte(gocardlessVectorBody), uint16(5), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, GoCardless(), gocardlessVectorSecret, "Webhook-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
