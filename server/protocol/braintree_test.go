package protocol

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// The published vector: the official clients' WebhookNotification.verify test
// (braintree/braintree_ruby spec, braintree_python, braintree_php, braintree_node):
// challenge 20f9f8ed05f77439fe955c977e4c8a53 with the integration keys gives
// integration_public_key|d9b899556c966b3f06945ec21311865d35df3ce4; recomputed with openssl.
const (
	braintreeVectorSecret = "integration_public_key:integration_private_key"
	braintreeSecret2      = "other_public_key:other_private_key"
	braintreeChallengeHex = "20f9f8ed05f77439fe955c977e4c8a53"
	braintreeChallengeRep = "integration_public_key|d9b899556c966b3f06945ec21311865d35df3ce4"
)

func braintreeSigned(t *testing.T, xmlBody string, secrets ...string) *Request {
	t.Helper()
	d, err := SignDelivery(Braintree(), SignInput{Body: []byte(xmlBody)}, secrets)
	if err != nil {
		t.Fatal(err)
	}
	return &Request{Method: "POST", Headers: d.Headers, Body: d.Body}
}

func braintreeForm(sig, payload string) *Request {
	return &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, Body: []byte(url.Values{"bt_signature": {sig}, "bt_payload": {payload}}.Encode())}
}

func TestBraintreeVerify(t *testing.T) {
	t.Parallel()
	p := Braintree()
	xmlBody := string(braintreeExampleBody("sub_1"))
	good := braintreeSigned(t, xmlBody, braintreeVectorSecret)
	form, _ := url.ParseQuery(string(good.Body))
	sig, payload := form.Get("bt_signature"), form.Get("bt_payload")
	both := braintreeSigned(t, xmlBody, braintreeSecret2, braintreeVectorSecret)
	// The genuine challenge reply replayed as a notification signature over the challenge.
	oracle := braintreeForm(braintreeChallengeRep, braintreeChallengeHex)
	for _, tc := range []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
	}{
		{name: "accepted", req: good, keys: []string{braintreeVectorSecret}, wantKey: "k0"},
		{name: "payload with a trailing newline signed (client compatibility)", req: braintreeForm(strings.SplitN(sig, "|", 2)[0]+"|"+braintreeDigest(mustBraintreeKey(t), payload+"\n"), payload), keys: []string{braintreeVectorSecret}, wantKey: "k0"},
		// The form's last field is bt_signature (url.Values sorts), so the space lands there.
		{name: "body tampered (one trailing space)", req: withBody(good, append(append([]byte(nil), good.Body...), ' ')), keys: []string{braintreeVectorSecret}, wantReason: ReasonMalformedSignature},
		{name: "payload tampered", req: braintreeForm(sig, base64.StdEncoding.EncodeToString([]byte(strings.Replace(xmlBody, "sub_1", "sub_2", 1)))), keys: []string{braintreeVectorSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: good, keys: []string{"integration_public_key:wrong_private_key"}, wantReason: ReasonSignatureMismatch},
		{name: "other public key", req: good, keys: []string{braintreeSecret2}, wantReason: ReasonSignatureMismatch},
		{name: "rotation: second key matches", req: good, keys: []string{braintreeSecret2, braintreeVectorSecret}, wantKey: "k1"},
		{name: "several pairs: either key", req: both, keys: []string{braintreeVectorSecret}, wantKey: "k0"},
		{name: "several pairs: the other key", req: both, keys: []string{braintreeSecret2}, wantKey: "k0"},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "missing bt_signature", req: &Request{Method: "POST", Body: []byte("bt_payload=" + url.QueryEscape(payload))}, keys: []string{braintreeVectorSecret}, wantReason: ReasonMissingSignature},
		{name: "malformed bt_signature", req: braintreeForm("integration_public_key", payload), keys: []string{braintreeVectorSecret}, wantReason: ReasonMalformedSignature},
		{name: "uppercase hex", req: braintreeForm(strings.ToUpper(sig), payload), keys: []string{braintreeVectorSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing bt_payload", req: &Request{Method: "POST", Body: []byte("bt_signature=" + url.QueryEscape(sig))}, keys: []string{braintreeVectorSecret}, wantReason: ReasonMalformedPayload},
		{name: "challenge reply replayed as a notification", req: oracle, keys: []string{braintreeVectorSecret}, wantReason: ReasonMalformedPayload},
		{name: "signed payload that is not a notification", req: braintreeSigned(t, "<other/>", braintreeVectorSecret), keys: []string{braintreeVectorSecret}, wantReason: ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && !strings.HasPrefix(res.EventID, "body-sha256:") {
				t.Fatalf("EventID = %q", res.EventID)
			}
		})
	}
	checkSecretsRefused(t, p, "", "no-colon", ":priv", "pub:", "pub:priv ", "pub|x:priv")
}

func mustBraintreeKey(t *testing.T) []byte {
	t.Helper()
	m, err := parseBraintreeSecret(braintreeVectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	_, k, _ := braintreeKey(m)
	return k
}

func TestBraintreeChallengeVector(t *testing.T) {
	t.Parallel()
	p := Braintree()
	keys := keysFor(t, p, braintreeVectorSecret, braintreeSecret2)
	res, err := p.Verify(&Request{Method: "GET", URL: "https://hooks.example.com/bt?bt_challenge=" + braintreeChallengeHex}, keys, Params{})
	// Unsigned, so it authenticates nothing: it names no key (a use of none).
	if err != nil || res.Handshake == nil || string(res.Handshake.Body) != braintreeChallengeRep || res.KeyID != "" {
		t.Fatalf("challenge = %+v, %v; want the answer under the first key, naming none", res, err)
	}
	for _, u := range []string{"https://hooks.example.com/bt", "https://hooks.example.com/bt?bt_challenge=HELLOWORLD", "https://hooks.example.com/bt?bt_challenge=bad%20challenge", "https://hooks.example.com/bt?bt_challenge=abc"} {
		req := &Request{Method: "GET", URL: u}
		res, err := p.Verify(req, keys, Params{})
		checkOutcome(t, res, err, ReasonMissingSignature, "", req)
	}
	req := &Request{Method: "GET", URL: "https://hooks.example.com/bt?bt_challenge=" + braintreeChallengeHex}
	res, err = p.Verify(req, nil, Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
}

func FuzzBraintreeSignature(f *testing.F) {
	f.Add(braintreeChallengeRep, base64.StdEncoding.EncodeToString(braintreeExampleBody("sub_1")))
	f.Fuzz(func(t *testing.T, sig, payload string) {
		p := Braintree()
		res, err := p.Verify(braintreeForm(sig, payload), keysFor(t, p, braintreeVectorSecret), Params{})
		checkAnswer(t, err)
		if err == nil && res.KeyID != "k0" {
			t.Fatalf("accepted without the key: %+v", res)
		}
	})
}
