package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strings"
	"testing"
)

// Published vectors from square/square-go-sdk webhooks/client/verify_signature_test.go,
// recomputed independently (Python hmac/hashlib) before being pinned here.
const (
	squareKey     = "Ibxx_5AKakO-3qeNVR61Dw"
	squareURL     = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
	squareBody    = `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`
	squareSig     = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
	squareEventID = "ac3ac95b-f97d-458c-a6e6-18981597e05f"
	squareKeyNew  = "MCmhFRxGX82xMwg5FsaoQA"
)

func squareRequest(u, sig, body string) *Request {
	return &Request{Method: "POST", URL: u, Headers: Headers{{Name: "x-square-hmacsha256-signature", Value: sig}}, Body: []byte(body)}
}

func squareSigFor(u, body, key string) string {
	return base64.StdEncoding.EncodeToString(hmacSum(sha256.New, []byte(key), func(h hash.Hash) { h.Write([]byte(u + body)) }))
}

func squareSigned(body, key string) *Request {
	return squareRequest(squareURL, squareSigFor(squareURL, body, key), body)
}

func TestSquareVerify(t *testing.T) {
	t.Parallel()
	p := Square()
	const fakeIDBody = `{"data":{"type":"webhooks","id":"fake_id"}}`
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted (square-go-sdk vector)", req: squareRequest(squareURL, squareSig, squareBody), keys: []string{squareKey}, wantKey: "k0", wantEvent: squareEventID},
		{name: "body tampered by one trailing space", req: squareRequest(squareURL, squareSig, squareBody+" "), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "body reformatted (square-go-sdk case)", req: squareRequest(squareURL, squareSig, strings.ReplaceAll(squareBody, ",", ", ")), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "notification URL mismatch (square-go-sdk case)", req: squareRequest("https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9", squareSig, squareBody), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "URL with a port Square did not call", req: squareRequest(strings.Replace(squareURL, ".site", ".site:443", 1), squareSig, squareBody), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret (square-go-sdk case)", req: squareRequest(squareURL, squareSig, squareBody), keys: []string{squareKeyNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: squareRequest(squareURL, squareSig, squareBody), wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key authenticates", req: squareRequest(squareURL, squareSig, squareBody), keys: []string{squareKey, squareKeyNew}, wantKey: "k0", wantEvent: squareEventID},
		{name: "rotation: new key authenticates", req: squareSigned(squareBody, squareKeyNew), keys: []string{squareKey, squareKeyNew}, wantKey: "k1", wantEvent: squareEventID},
		{name: "all-zero signature of the right size", req: squareRequest(squareURL, strings.Repeat("A", 43)+"=", squareBody), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "SHA-1 sized signature (square-go-sdk case)", req: squareRequest(squareURL, "1z2n3DEJJiUPKcPzQo1ftvbxGdw=", squareBody), keys: []string{squareKey}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: &Request{URL: squareURL, Body: []byte(squareBody)}, keys: []string{squareKey}, wantReason: ReasonMissingSignature},
		{name: "only the legacy SHA-1 header", req: &Request{URL: squareURL, Headers: Headers{{Name: "x-square-signature", Value: "1z2n3DEJJiUPKcPzQo1ftvbxGdw="}}, Body: []byte(squareBody)}, keys: []string{squareKey}, wantReason: ReasonMissingSignature},
		{name: "header name case-insensitive", req: &Request{URL: squareURL, Headers: Headers{{Name: "X-Square-HmacSha256-Signature", Value: squareSig}}, Body: []byte(squareBody)}, keys: []string{squareKey}, wantKey: "k0", wantEvent: squareEventID},
		{name: "empty header", req: squareRequest(squareURL, "", squareBody), keys: []string{squareKey}, wantReason: ReasonMalformedSignature},
		{name: "not base64", req: squareRequest(squareURL, "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4*", squareBody), keys: []string{squareKey}, wantReason: ReasonMalformedSignature},
		{name: "unpadded", req: squareRequest(squareURL, strings.TrimSuffix(squareSig, "="), squareBody), keys: []string{squareKey}, wantReason: ReasonMalformedSignature},
		{name: "hex", req: squareRequest(squareURL, strings.Repeat("ab", 32), squareBody), keys: []string{squareKey}, wantReason: ReasonMalformedSignature},
		{name: "no URL", req: squareRequest("", squareSig, squareBody), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "empty body with its valid signature (square-go-sdk would accept anything)", req: squareSigned("", squareKey), keys: []string{squareKey}, wantReason: ReasonMalformedPayload},
		{name: "empty body with a bogus signature", req: squareRequest(squareURL, squareSig, ""), keys: []string{squareKey}, wantReason: ReasonSignatureMismatch},
		{name: "unescaped chars vector, no event_id", req: squareRequest("https://webhook.site/webhooks", "W3FlCNk5IA3ZQ2LHTWoajvzfaDu/OwY2tNHIHC3IUOA=", fakeIDBody), keys: []string{"signature-key"}, wantReason: ReasonMissingEventID},
		{name: "escaped chars vector, no event_id", req: squareRequest("https://webhook.site/webhooks", "Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U=", `{"data":{"type":"webhooks","id":">id<"}}`), keys: []string{"signature-key"}, wantReason: ReasonMissingEventID},
		{name: "body not JSON", req: squareSigned("not json", squareKey), keys: []string{squareKey}, wantReason: ReasonMalformedPayload},
		{name: "body a JSON array", req: squareSigned(`[{"event_id":"x"}]`, squareKey), keys: []string{squareKey}, wantReason: ReasonMalformedPayload},
		{name: "event_id empty", req: squareSigned(`{"event_id":""}`, squareKey), keys: []string{squareKey}, wantReason: ReasonMissingEventID},
		{name: "event_id not a string", req: squareSigned(`{"event_id":7}`, squareKey), keys: []string{squareKey}, wantReason: ReasonMissingEventID},
		{name: "nested id is not the event id", req: squareSigned(`{"data":{"id":"x"},"event_id":"e1"}`, squareKey), keys: []string{squareKey}, wantKey: "k0", wantEvent: "e1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

func TestSquareSign(t *testing.T) {
	t.Parallel()
	p := Square()
	h, err := p.Sign(SignInput{Body: []byte(squareBody), URL: squareURL}, []string{squareKey, squareKeyNew})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "x-square-hmacsha256-signature" || h[0].Value != squareSig {
		t.Fatalf("Sign = %+v, want the published signature %s", h, squareSig)
	}
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte(squareBody), URL: squareURL}, nil},
		{"no URL", SignInput{Body: []byte(squareBody)}, []string{squareKey}},
		{"invalid secret", SignInput{Body: []byte(squareBody), URL: squareURL}, []string{"with space"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}

func TestSquareParseSecret(t *testing.T) {
	t.Parallel()
	p := Square()
	s, v, err := p.ExampleSecret()
	if err != nil || s != v || len(s) != 22 {
		t.Fatalf("ExampleSecret = %q, %q, %v", s, v, err)
	}
	for _, ok := range []string{s, squareKey, "signature-key"} {
		if _, err := p.ParseSecret(ok); err != nil {
			t.Errorf("ParseSecret rejects a key: %v", err)
		}
	}
	for _, bad := range []string{"", squareKey + " ", "\t" + squareKey} {
		if _, err := p.ParseSecret(bad); err == nil || (bad != "" && strings.Contains(err.Error(), squareKey)) {
			t.Errorf("ParseSecret(%q) = %v", bad, err)
		}
	}
}

func FuzzSquareSignature(f *testing.F) {
	p := Square()
	keys := keysFor(f, p, squareKey)
	f.Add(squareSig, squareURL, []byte(squareBody), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, sig, rawURL string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(squareRequest(rawURL, sig, string(body)), keys, Params{Now: fixedNow})
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, URL: squareURL}, squareKey)
		req.URL = squareURL
		checkMutation(t, p, keys, Params{Now: fixedNow}, req, "x-square-hmacsha256-signature", pos, repl)
	})
}

// TestSquareSDKVectors runs the vectors of square/square-nodejs-sdk
// test/utilities/webhooksHelper.test.ts (also square/square-python-sdk
// tests/integration/test_webhooks_helper.py): HMAC-SHA256 of notificationUrl + body, base64,
// keyed with the signature key's string. "query URL" was computed with the same formula in Node
// (crypto.createHmac) over a notification URL with a query: the query is part of the signed URL.
func TestSquareSDKVectors(t *testing.T) {
	t.Parallel()
	p := Square()
	const queryURL = "https://example.com/hooks/sq?env=prod&x=%2F"
	tests := []struct {
		name       string
		url, sig   string
		key, body  string
		wantReason Reason
	}{
		{name: "signature validation pass", url: squareURL, sig: squareSig, key: squareKey, body: squareBody},
		{name: "unescaped chars pass (no event_id)", url: "https://webhook.site/webhooks", sig: "W3FlCNk5IA3ZQ2LHTWoajvzfaDu/OwY2tNHIHC3IUOA=", key: "signature-key", body: `{"data":{"type":"webhooks","id":"fake_id"}}`, wantReason: ReasonMissingEventID},
		{name: "escaped chars pass (no event_id)", url: "https://webhook.site/webhooks", sig: "Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U=", key: "signature-key", body: `{"data":{"type":"webhooks","id":">id<"}}`, wantReason: ReasonMissingEventID},
		{name: "notification url mismatch", url: "https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9", sig: squareSig, key: squareKey, body: squareBody, wantReason: ReasonSignatureMismatch},
		{name: "invalid signature key", url: squareURL, sig: squareSig, key: "MCmhFRxGX82xMwg5FsaoQA", body: squareBody, wantReason: ReasonSignatureMismatch},
		{name: "invalid signature header (SHA-1 size)", url: squareURL, sig: "1z2n3DEJJiUPKcPzQo1ftvbxGdw=", key: squareKey, body: squareBody, wantReason: ReasonMalformedSignature},
		{name: "request body mismatch", url: squareURL, sig: squareSig, key: squareKey, body: `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-06-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`, wantReason: ReasonSignatureMismatch},
		{name: "empty notification url", url: "", sig: squareSig, key: squareKey, body: squareBody, wantReason: ReasonSignatureMismatch},
		{name: "query URL", url: queryURL, sig: "+7aj9hfts9XFA3U8dbWOcT/1EcAZ4zr0NHtOTrzNNRc=", key: squareKey, body: squareBody},
		{name: "query URL with the query dropped", url: "https://example.com/hooks/sq", sig: "+7aj9hfts9XFA3U8dbWOcT/1EcAZ4zr0NHtOTrzNNRc=", key: squareKey, body: squareBody, wantReason: ReasonSignatureMismatch},
		{name: "query URL decoded", url: "https://example.com/hooks/sq?env=prod&x=/", sig: "+7aj9hfts9XFA3U8dbWOcT/1EcAZ4zr0NHtOTrzNNRc=", key: squareKey, body: squareBody, wantReason: ReasonSignatureMismatch},
		{name: "trailing slash added", url: squareURL + "/", sig: squareSig, key: squareKey, body: squareBody, wantReason: ReasonSignatureMismatch},
		{name: "http instead of https", url: "http://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9", sig: squareSig, key: squareKey, body: squareBody, wantReason: ReasonSignatureMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := squareRequest(tc.url, tc.sig, tc.body)
			res, err := p.Verify(req, keysFor(t, p, tc.key), Params{Now: fixedNow})
			wantKey := ""
			if tc.wantReason == 0 {
				wantKey = "k0"
			}
			checkOutcome(t, res, err, tc.wantReason, wantKey, req)
		})
	}
}
