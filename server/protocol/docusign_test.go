package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

const (
	dsKey    = "Cl3e2Hkb8g8W2Tp8y/7m0bBqQ8kYq0cL9aZTnNQe7i4="
	dsKeyNew = "8oXhN0r2g6a8m+0ZQf1p3V7yC9kL2sJ4dW6tB5eH1uA="
	dsBody   = `{"event":"recipient-completed","apiVersion":"v2.1","uri":"/restapi/v2.1/accounts/1f2e3d4c/envelopes/93be49ab","retryCount":0,"configurationId":10499,"generatedDateTime":"2021-09-23T22:42:54.3540000Z","data":{"accountId":"1f2e3d4c","userId":"a0b1c2d3","envelopeId":"93be49ab-4d7e-4b6b-8a32-6b1e2c3d4e5f","recipientId":"1"}}`
)

// dsSig is the docs' ComputeHash (developers.docusign.com/platform/webhooks/connect/validate):
// HMAC-SHA256 keyed with the UTF-8 bytes of the secret over the payload bytes, base64.
func dsSig(key, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func dsReq(body string, h ...string) *Request {
	r := &Request{Method: "POST", Body: []byte(body)}
	for i := 0; i+1 < len(h); i += 2 {
		r.Headers = append(r.Headers, Header{Name: h[i], Value: h[i+1]})
	}
	return r
}

func TestDocuSignVerify(t *testing.T) {
	t.Parallel()
	p := DocuSign()
	good := dsSig(dsKey, dsBody)
	goodNew := dsSig(dsKeyNew, dsBody)
	wrong := dsSig("other", dsBody)
	wantID := "recipient-completed:93be49ab-4d7e-4b6b-8a32-6b1e2c3d4e5f:2021-09-23T22:42:54.3540000Z:1"
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: dsReq(dsBody, "X-DocuSign-Signature-1", good), keys: []string{dsKey}, wantKey: "k0", wantEvent: wantID},
		{name: "body tampered by one trailing space", req: dsReq(dsBody+" ", "X-DocuSign-Signature-1", good), keys: []string{dsKey}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: dsReq(dsBody, "X-DocuSign-Signature-1", good), keys: []string{dsKeyNew}, wantReason: ReasonSignatureMismatch},
		{name: "key used as text, not base64-decoded", req: dsReq(dsBody, "X-DocuSign-Signature-1", func() string { k, _ := base64.StdEncoding.DecodeString(dsKey); return dsSig(string(k), dsBody) }()), keys: []string{dsKey}, wantReason: ReasonSignatureMismatch},
		{name: "malformed header", req: dsReq(dsBody, "X-DocuSign-Signature-1", strings.TrimRight(good, "=")), keys: []string{dsKey}, wantReason: ReasonMalformedSignature},
		{name: "malformed beside a wrong one", req: dsReq(dsBody, "X-DocuSign-Signature-1", "abc", "X-DocuSign-Signature-2", wrong), keys: []string{dsKey}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: dsReq(dsBody, "X-Authorization-Digest", "HMACSHA256"), keys: []string{dsKey}, wantReason: ReasonMissingSignature},
		{name: "only unnumbered or out-of-range names", req: dsReq(dsBody, "X-DocuSign-Signature-0", good, "X-DocuSign-Signature-101", good, "X-DocuSign-Signature-01", good, "X-DocuSign-Signature-x", good), keys: []string{dsKey}, wantReason: ReasonMissingSignature},
		{name: "header name case-insensitive", req: dsReq(dsBody, "x-docusign-signature-1", good), keys: []string{dsKey}, wantKey: "k0", wantEvent: wantID},
		{name: "rotation: two headers, old key", req: dsReq(dsBody, "X-DocuSign-Signature-1", good, "X-DocuSign-Signature-2", goodNew), keys: []string{dsKey}, wantKey: "k0", wantEvent: wantID},
		{name: "rotation: two headers, new key", req: dsReq(dsBody, "X-DocuSign-Signature-1", good, "X-DocuSign-Signature-2", goodNew), keys: []string{"retired", dsKeyNew}, wantKey: "k1", wantEvent: wantID},
		{name: "several signatures, the 100th matches", req: dsReq(dsBody, "X-DocuSign-Signature-1", wrong, "X-DocuSign-Signature-100", good), keys: []string{dsKey}, wantKey: "k0", wantEvent: wantID},
		{name: "identity: without recipient", req: dsReq(`{"event":"envelope-sent","generatedDateTime":"t1","data":{"envelopeId":"e1"}}`, "X-DocuSign-Signature-1", dsSig(dsKey, `{"event":"envelope-sent","generatedDateTime":"t1","data":{"envelopeId":"e1"}}`)), keys: []string{dsKey}, wantKey: "k0", wantEvent: "envelope-sent:e1:t1"},
		{name: "identity: retryCount ignored", req: dsReq(strings.Replace(dsBody, `"retryCount":0`, `"retryCount":3`, 1), "X-DocuSign-Signature-1", dsSig(dsKey, strings.Replace(dsBody, `"retryCount":0`, `"retryCount":3`, 1))), keys: []string{dsKey}, wantKey: "k0", wantEvent: wantID},
		{name: "identity missing: body hash", req: dsReq(`{"event":"x"}`, "X-DocuSign-Signature-1", dsSig(dsKey, `{"event":"x"}`)), keys: []string{dsKey}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`{"event":"x"}`))},
		{name: "identity: XML legacy body hashes", req: dsReq(`<DocuSignEnvelopeInformation/>`, "X-DocuSign-Signature-1", dsSig(dsKey, `<DocuSignEnvelopeInformation/>`)), keys: []string{dsKey}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`<DocuSignEnvelopeInformation/>`))},
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

func TestDocuSignSign(t *testing.T) {
	t.Parallel()
	p := DocuSign()
	h, err := p.Sign(SignInput{Body: []byte(dsBody)}, []string{dsKey, dsKeyNew})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Headers: h, Body: []byte(dsBody)}
	if header(req, "X-DocuSign-Signature-1") != dsSig(dsKey, dsBody) || header(req, "X-DocuSign-Signature-2") != dsSig(dsKeyNew, dsBody) || header(req, "X-Authorization-Digest") != "HMACSHA256" {
		t.Fatalf("Sign = %+v", h)
	}
	if _, err := p.Sign(SignInput{Body: []byte(dsBody)}, nil); err == nil {
		t.Fatal("Sign without keys succeeded")
	}
	for _, s := range []string{"", " k"} {
		if _, err := p.ParseSecret(s); err == nil {
			t.Errorf("ParseSecret(%q) accepted", s)
		}
	}
}

func FuzzDocuSignSignature(f *testing.F) {
	p := DocuSign()
	keys := keysFor(f, p, dsKey)
	f.Add("X-DocuSign-Signature-1", dsSig(dsKey, dsBody), []byte(dsBody), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, name, sig string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(dsReq(string(body), name, sig), keys, Params{})
		checkAnswer(t, err)
		if id := docusignEventID(body); id == "" || len(id) > 512 {
			t.Fatalf("identity %q", id)
		}
		req := signed(t, p, SignInput{Body: body}, dsKey)
		checkMutation(t, p, keys, Params{}, req, "X-DocuSign-Signature-1", pos, repl)
	})
}
