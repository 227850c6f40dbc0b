package protocol

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Vectors of Twilio's Webhook shared keys (twilio.com/docs/usage/webhooks/webhook-shared-keys),
// made and checked with the official twilio-node 6.3.1 (lib/webhooks/webhooks.js): the signature
// is computed as its getExpectedTwilioSignature computes it, and its validateRequest (form) or
// validateRequestWithBody (bodySHA256) returns true for each, with the algorithm its
// getSignatureAlgorithm reads from the settings header.
const (
	twilioSharedKeySecret  = "sk_secret_5f1c2a9e7b3d4c8a"
	twilioSharedKeyFormURL = "https://hooks.example.com/twilio/sms?tenant=acme"
	twilioSharedKeyForm    = "To=%2B15005550006&From=%2B15551234567&Body=Hello%2C+world&MessageSid=SM1234567890abcdef1234567890abcdef"
	// HMAC-SHA256 and HMAC-SHA1 of the form delivery with the shared key's secret.
	twilioSharedKeyFormSHA256 = "rZ9dhJYrjoUqv5FuyPtIRFhnTGnGzPspdwgkSTS8BLk="
	twilioSharedKeyFormSHA1   = "KIliG5+l5np4gpRbJMqPULVVwco="
	twilioSharedKeyJSONURL    = "https://hooks.example.com/twilio/events?bodySHA256=6c0f1c6b00798ada1422ed57955ab78e3e405389d24c51e88de934ce88aec256"
	twilioSharedKeyJSON       = `{"event":"message.delivered","sid":"SM1"}`
	twilioSharedKeyJSONSHA256 = "goKCZApGJmMoVnJrXa3BpmKeoX2Wm2SH+z4V6bfgwis="
)

// TestTwilioSharedKeyDeliveries: a delivery a Webhooks Rule signs with a SharedKey carries
// X-Twilio-Webhooks-Signature-Settings ("key=<id>,algorithm=HMAC_SHA256") and an HMAC of the
// usual string keyed with the SharedKey's secret. It was rejected whatever its secret, and an
// account that set up a Webhooks Rule lost every delivery the rule covered. It verifies against
// the endpoint's secrets (the SharedKey secret added as one), as twilio-node verifies it: the
// algorithm is the first non-empty "algorithm=" part, in any case, HMAC_SHA1 without one, and
// any other algorithm fails.
func TestTwilioSharedKeyDeliveries(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, "an-old-auth-token-0123456789abcd", twilioSharedKeySecret)
	form := func(sig, settings string) *Request {
		req := &Request{Method: "POST", URL: twilioSharedKeyFormURL, Body: []byte(twilioSharedKeyForm), Headers: Headers{
			{Name: "Content-Type", Value: "application/x-www-form-urlencoded"},
			{Name: "X-Twilio-Signature", Value: sig},
		}}
		if settings != "" {
			req.Headers = append(req.Headers, Header{Name: "X-Twilio-Webhooks-Signature-Settings", Value: settings})
		}
		return req
	}
	accepted := map[string]*Request{
		"form, HMAC_SHA256":                        form(twilioSharedKeyFormSHA256, "key=webhooks_sharedkey_0123,algorithm=HMAC_SHA256"),
		"form, algorithm in lower case, spaced":    form(twilioSharedKeyFormSHA256, " key=x , algorithm = hmac_sha256 "),
		"form, settings without an algorithm":      form(twilioSharedKeyFormSHA1, "key=webhooks_sharedkey_0123"),
		"form, empty algorithm, then HMAC_SHA256":  form(twilioSharedKeyFormSHA256, "algorithm=,algorithm=HMAC_SHA256"),
		"form, HMAC_SHA1 named":                    form(twilioSharedKeyFormSHA1, "key=k,algorithm=HMAC_SHA1"),
		"form, Auth Token scheme (no settings)":    form(twilioSharedKeyFormSHA1, ""),
		"JSON through bodySHA256, HMAC_SHA256":     {Method: "POST", URL: twilioSharedKeyJSONURL, Body: []byte(twilioSharedKeyJSON), Headers: Headers{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Twilio-Signature", Value: twilioSharedKeyJSONSHA256}, {Name: "X-Twilio-Webhooks-Signature-Settings", Value: "key=k,algorithm=HMAC_SHA256"}}},
		"form, SHA-256 signature, first part wins": form(twilioSharedKeyFormSHA256, "key=k,algorithm=HMAC_SHA256,algorithm=HMAC_SHA1"),
		// Node joins a repeated header's values with ", " before twilio-node reads it: the
		// algorithm of the second applies when the first names none.
		"form, repeated settings, the second names HMAC_SHA256": withAnotherHeader(form(twilioSharedKeyFormSHA256, "key=k"),
			"X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_SHA256"),
	}
	for name, req := range accepted {
		t.Run(name, func(t *testing.T) {
			res, err := p.Verify(req, keys, Params{})
			checkOutcome(t, res, err, 0, "k1", req)
		})
	}

	rejected := map[string]struct {
		req    *Request
		reason Reason
	}{
		// A SHA-256 signature without the header is not an HMAC-SHA1: twilio-node fails it.
		"SHA-256 signature, no settings": {form(twilioSharedKeyFormSHA256, ""), ReasonMalformedSignature},
		// The header names SHA-256 but the signature is SHA-1's length.
		"SHA-1 signature, settings say HMAC_SHA256": {form(twilioSharedKeyFormSHA1, "algorithm=HMAC_SHA256"), ReasonMalformedSignature},
		// "Algorithm" is not "algorithm" (twilio-node compares the name exactly): SHA-1.
		"capitalised name read as no algorithm":         {form(twilioSharedKeyFormSHA256, "Algorithm=HMAC_SHA256"), ReasonMalformedSignature},
		"an algorithm Twilio's libraries do not verify": {form(twilioSharedKeyFormSHA256, "key=k,algorithm=HMAC_SHA512"), ReasonMalformedSignature},
		"repeated settings, the first algorithm wins": {withAnotherHeader(form(twilioSharedKeyFormSHA256, "algorithm=HMAC_SHA1"),
			"X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_SHA256"), ReasonMalformedSignature},
		"a changed parameter": {&Request{Method: "POST", URL: twilioSharedKeyFormURL,
			Body: []byte(strings.Replace(twilioSharedKeyForm, "Hello", "Hallo", 1)), Headers: form(twilioSharedKeyFormSHA256, "algorithm=HMAC_SHA256").Headers}, ReasonSignatureMismatch},
		"a changed JSON body": {&Request{Method: "POST", URL: twilioSharedKeyJSONURL, Body: []byte(strings.Replace(twilioSharedKeyJSON, "SM1", "SM2", 1)),
			Headers: Headers{{Name: "X-Twilio-Signature", Value: twilioSharedKeyJSONSHA256}, {Name: "X-Twilio-Webhooks-Signature-Settings", Value: "algorithm=HMAC_SHA256"}}}, ReasonSignatureMismatch},
	}
	for name, tc := range rejected {
		t.Run(name, func(t *testing.T) {
			res, err := p.Verify(tc.req, keys, Params{})
			checkOutcome(t, res, err, tc.reason, "", tc.req)
		})
	}

	// Without the SharedKey's secret among the endpoint's, nothing it signed verifies.
	req := form(twilioSharedKeyFormSHA256, "key=k,algorithm=HMAC_SHA256")
	res, err := p.Verify(req, keysFor(t, p, "an-old-auth-token-0123456789abcd"), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
}

// FuzzTwilioSignatureSettings: any X-Twilio-Webhooks-Signature-Settings value is read without a
// panic as HMAC-SHA1, HMAC-SHA256 or a refusal, as twilio-node reads it: SHA-256 only when the
// first "algorithm=" part with a value says HMAC_SHA256 in some case; and a delivery signed with
// the shared key under the algorithm read authenticates.
func FuzzTwilioSignatureSettings(f *testing.F) {
	p := Twilio()
	keys := keysFor(f, p, twilioSharedKeySecret)
	for _, s := range []string{"key=webhooks_sharedkey_0123,algorithm=HMAC_SHA256", " key=x , algorithm = hmac_sha256 ", "key=k",
		"algorithm=,algorithm=HMAC_SHA256", "algorithm=HMAC_SHA512", "Algorithm=HMAC_SHA256", "=,=,algorithm", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, settings string) {
		headers := Headers{{Name: "X-Twilio-Webhooks-Signature-Settings", Value: settings}}
		newHash, size, name, err := twilioAlgorithm(headers)
		if err != nil {
			checkAnswer(t, err)
			if ReasonOf(err) != ReasonMalformedSignature {
				t.Fatalf("settings %q: refused as %v, want a malformed signature", settings, ReasonOf(err))
			}
			return
		}
		named := ""
		for part := range strings.SplitSeq(settings, ",") {
			if k, v, ok := strings.Cut(part, "="); ok && strings.TrimSpace(k) == "algorithm" && strings.TrimSpace(v) != "" {
				named = strings.ToUpper(strings.TrimSpace(v))
				break
			}
		}
		if (size == 32) != (named == "HMAC_SHA256") || (name == "HMAC-SHA256") != (size == 32) {
			t.Fatalf("settings %q read as %s (%d bytes), the first algorithm named is %q", settings, name, size, named)
		}
		// The form vector signed under the algorithm read authenticates with the settings given.
		sig := base64.StdEncoding.EncodeToString(hmacSum(newHash, []byte(twilioSharedKeySecret), twilioMessage(twilioSharedKeyFormURL,
			"BodyHello, worldFrom+15551234567MessageSidSM1234567890abcdef1234567890abcdefTo+15005550006")))
		req := &Request{Method: "POST", URL: twilioSharedKeyFormURL, Body: []byte(twilioSharedKeyForm),
			Headers: append(Headers{{Name: "X-Twilio-Signature", Value: sig}}, headers...)}
		if _, err := p.Verify(req, keys, Params{}); err != nil {
			t.Fatalf("settings %q: a delivery signed with %s: %v", settings, name, err)
		}
	})
}

// withAnotherHeader returns req with one header more, beside any of the same name.
func withAnotherHeader(req *Request, name, value string) *Request {
	req.Headers = append(req.Headers, Header{Name: name, Value: value})
	return req
}
