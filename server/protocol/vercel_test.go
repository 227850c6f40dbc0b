package protocol

import (
	"strings"
	"testing"
)

// Vercel account (team) and integration webhooks: x-vercel-signature is the lowercase hex
// HMAC-SHA1 of the raw body, keyed with the webhook's secret or the integration's Client
// Secret; the body's top-level "id" names the event.

const (
	vercelSecret    = "Vx3kQ9mTz7LpR2nW8cYb5HdF"
	vercelSecretNew = "Rz6tJ1pLq8Ws4YnC0vKm3XbE"
	vercelEventID   = "uHZ8iTDEGPKk2DfhNaXnaB9E"
)

// vercelVectorBody is a deployment.created event laid out as Vercel's Webhooks API reference
// describes (type, id, createdAt, region, payload).
const vercelVectorBody = `{"id":"uHZ8iTDEGPKk2DfhNaXnaB9E","type":"deployment.created","createdAt":1767225600000,"region":"iad1","payload":{"team":{"id":"team_1a2b3c"},"user":{"id":"usr_9z8y7x"},"deployment":{"id":"dpl_2mG7hT5yK1","meta":{},"url":"example-abc123.vercel.app","name":"example"},"links":{"deployment":"https://vercel.com/acme/example/2mG7hT5yK1","project":"https://vercel.com/acme/example"},"target":"production","project":{"id":"prj_4xQ8wE"},"plan":"pro","regions":["iad1"]}}`

// vercelVector is the signature of vercelVectorBody under vercelSecret, computed outside Go
// both ways, which agree:
//
//	printf '%s' "$BODY" | openssl dgst -sha1 -hmac "$vercelSecret"
//	node -e 'crypto.createHmac("sha1", secret).update(new Uint8Array(Buffer.from(body, "utf-8"))).digest("hex")'
//
// the second being the sha1() of Vercel's own example integration
// (vercel/example-marketplace-integration app/webhook/route.ts).
const (
	vercelVector    = "f2d3ff710e640ba9116397cf84bc3debffba535b"
	vercelVectorNew = "636a492ba91c43b8b1153176e5c621c288ab5139"
)

func TestVercelRegistered(t *testing.T) {
	t.Parallel()
	p, ok := Default().Lookup("vercel")
	if !ok {
		t.Fatal(`"vercel" is not in the default registry`)
	}
	if p.SignsTimestamp || p.DefaultTolerance != 0 || p.NeedsURL || p.StaticCredential || p.EveryDeliveryNew {
		t.Fatalf("vercel signs only the body: %+v", p)
	}
	if !strings.HasPrefix(p.DocsURL, "https://vercel.com/docs/") {
		t.Fatalf("DocsURL = %q, want Vercel's own docs", p.DocsURL)
	}
}

func TestVercelIndependentVector(t *testing.T) {
	t.Parallel()
	p := Vercel()
	body := []byte(vercelVectorBody)
	req := &Request{Method: "POST", URL: "https://hooks.example.com/vercel", Headers: Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: "x-vercel-signature", Value: vercelVector},
	}, Body: body}
	res, err := p.Verify(req, keysFor(t, p, vercelSecret), Params{Now: fixedNow})
	if err != nil {
		t.Fatalf("the openssl/node vector was rejected: %v", err)
	}
	if res.KeyID != "k0" || res.EventID != vercelEventID {
		t.Fatalf("result %+v, want key k0 and event %s", res, vercelEventID)
	}
	// Sign produces exactly that header.
	h, err := p.Sign(SignInput{Body: body, EventID: vercelEventID}, []string{vercelSecret})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := h.Get("x-vercel-signature"); v != vercelVector {
		t.Fatalf("Sign = %+v, want x-vercel-signature %s", h, vercelVector)
	}
	// The second secret's vector too, and the pair as a rotation.
	req2 := withHeader(req, "x-vercel-signature", vercelVectorNew)
	res, err = p.Verify(req2, keysFor(t, p, vercelSecret, vercelSecretNew), Params{Now: fixedNow})
	if err != nil || res.KeyID != "k1" {
		t.Fatalf("vector of the second secret: %+v, %v", res, err)
	}
	if string(ExampleBody(p, vercelEventID)) != vercelVectorBody {
		t.Fatalf("ExampleBody drifted from the vector body:\n%s", ExampleBody(p, vercelEventID))
	}
	if h := hmacSHA1Hex(vercelSecret, vercelVectorBody); h != vercelVector {
		t.Fatalf("Go's HMAC-SHA1 = %s, want %s", h, vercelVector)
	}
}

func TestVercelVerify(t *testing.T) {
	t.Parallel()
	p := Vercel()
	body := ExampleBody(p, vercelEventID)
	in := SignInput{Body: body, EventID: vercelEventID}
	good := signed(t, p, in, vercelSecret)
	indep := hmacSHA1Hex(vercelSecret, string(body))
	fx := signingFixture{
		p: p, secret: vercelSecret, secretNew: vercelSecretNew, in: in, wantEvent: vercelEventID,
		sigHeader: "x-vercel-signature",
		noID:      signed(t, p, SignInput{Body: []byte(`{"type":"deployment.created","createdAt":1767225600000,"payload":{}}`)}, vercelSecret),
		malformed: []string{
			"garbage",
			strings.ToUpper(indep), // Node's digest("hex") is lowercase
			indep[:39],             // one digit short
			indep + "0",            // one digit long
			"sha1=" + indep,        // Vercel sends no prefix
			hmacSHA256Hex(vercelSecret, string(body)), // 64 digits: not SHA-1
			strings.Repeat("z", 40),                   // not hex
			" " + indep,                               // padded
		},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "x-vercel-signature", indep), keys: []string{vercelSecret}, wantKey: "k0", wantEvent: vercelEventID},
		verifyCase{name: "signature of another body", req: withHeader(good, "x-vercel-signature", hmacSHA1Hex(vercelSecret, string(ExampleBody(p, "evt_other")))), keys: []string{vercelSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "body not JSON", req: signed(t, p, SignInput{Body: []byte("x")}, vercelSecret), keys: []string{vercelSecret}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "JSON array body", req: signed(t, p, SignInput{Body: []byte(`[{"id":"a"}]`)}, vercelSecret), keys: []string{vercelSecret}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "empty id", req: signed(t, p, SignInput{Body: []byte(`{"id":"","type":"deployment.created"}`)}, vercelSecret), keys: []string{vercelSecret}, wantReason: ReasonMissingEventID},
		verifyCase{name: "numeric id", req: signed(t, p, SignInput{Body: []byte(`{"id":12,"type":"deployment.created"}`)}, vercelSecret), keys: []string{vercelSecret}, wantReason: ReasonMissingEventID},
		verifyCase{name: "nested id only", req: signed(t, p, SignInput{Body: []byte(`{"type":"deployment.created","payload":{"deployment":{"id":"dpl_1"}}}`)}, vercelSecret), keys: []string{vercelSecret}, wantReason: ReasonMissingEventID},
		verifyCase{name: "id is the top-level one, not the payload's", req: signed(t, p, SignInput{Body: []byte(`{"payload":{"id":"inner"},"id":"outer"}`)}, vercelSecret), keys: []string{vercelSecret}, wantKey: "k0", wantEvent: "outer"},
		verifyCase{name: "tampered id", req: withBody(good, []byte(strings.Replace(string(body), vercelEventID, "forged", 1))), keys: []string{vercelSecret}, wantReason: ReasonSignatureMismatch},
	)
	runVerifyCases(t, p, cs)
}

// TestVercelDeliveryIDOnRetry: the identity is the signed body's "id", so a resend of the same
// bytes (a retry, a replay) is the same event whatever else the request carries, and a
// different event is a different identity.
func TestVercelDeliveryIDOnRetry(t *testing.T) {
	t.Parallel()
	p := Vercel()
	keys := keysFor(t, p, vercelSecret)
	first := signed(t, p, SignInput{Body: ExampleBody(p, "evt_a")}, vercelSecret)
	again := cloneRequest(first)
	again.Headers = append(again.Headers, Header{Name: "X-Vercel-Id", Value: "iad1::abcde-1767225600000-0123456789ab"})
	other := signed(t, p, SignInput{Body: ExampleBody(p, "evt_b")}, vercelSecret)
	r1, err1 := p.Verify(first, keys, Params{Now: fixedNow})
	r2, err2 := p.Verify(again, keys, Params{Now: fixedNow.Add(24 * 3600e9)})
	r3, err3 := p.Verify(other, keys, Params{Now: fixedNow})
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("verify: %v, %v, %v", err1, err2, err3)
	}
	if r1.EventID != "evt_a" || r2.EventID != r1.EventID || r3.EventID != "evt_b" {
		t.Fatalf("identities %q %q %q", r1.EventID, r2.EventID, r3.EventID)
	}
}

// TestVercelSecrets: the secret is used as its own bytes; an empty or space-padded one would
// never be what Vercel displays.
func TestVercelSecrets(t *testing.T) {
	t.Parallel()
	p := Vercel()
	if k, err := p.ParseSecret(vercelSecret); err != nil || string(k) != vercelSecret {
		t.Fatalf("ParseSecret = %q, %v", k, err)
	}
	for _, bad := range []string{"", " " + vercelSecret, vercelSecret + "\n"} {
		if _, err := p.ParseSecret(bad); err == nil {
			t.Fatalf("ParseSecret(%q) accepted", bad)
		} else if strings.Contains(err.Error(), vercelSecret) {
			t.Fatalf("error quotes the secret: %v", err)
		}
	}
	s, v, err := p.ExampleSecret()
	if err != nil || s != v || s == "" {
		t.Fatalf("ExampleSecret = %q, %q, %v", s, v, err)
	}
	if _, err := p.Sign(SignInput{Body: []byte(`{"id":"x"}`)}, nil); err == nil {
		t.Fatal("Sign without a secret succeeded")
	}
}

func FuzzVercelSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Vercel(), vercelSecret, "x-vercel-signature",
		SignInput{Body: ExampleBody(Vercel(), vercelEventID)}, Params{Now: fixedNow},
		vercelVector, "sha1="+vercelVector, strings.ToUpper(vercelVector), "")
}
