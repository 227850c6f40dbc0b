package protocol

import (
	"net/url"
	"strings"
	"testing"
)

// The published vector: the official SDKs' EventCallbackHelper example (hellosign/dropbox-sign-php
// and the other generated SDKs): API key, event_time 1669926463, event_type account_confirmed,
// event_hash ff8b0343...; recomputed independently with openssl.
const (
	hellosignVectorKey  = "324e3b0840f065eb51f3fd63231d0d33daa35d4ed10d27718839e81737065782"
	hellosignVectorJSON = `{"event":{"event_type":"account_confirmed","event_time":"1669926463","event_hash":"ff8b03439122f9160500c3fb855bdee5a9ccba5fff27d3b258745d8f3074832f","event_metadata":{"related_signature_id":null,"reported_for_account_id":"6421d70b9bd45059fa207d03ab8d1b96515b472c","reported_for_app_id":null,"event_message":null}}}`
	hellosignSecret2    = "0000000000000000000000000000000000000000000000000000000000000001"
)

func hellosignForm(jsonField string) *Request {
	return &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, Body: []byte("json=" + url.QueryEscape(jsonField))}
}

func hellosignMultipart(t *testing.T, jsonField string) *Request {
	t.Helper()
	body := "--b\r\nContent-Disposition: form-data; name=\"json\"\r\n\r\n" + jsonField + "\r\n--b--\r\n"
	return &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "multipart/form-data; boundary=b"}}, Body: []byte(body)}
}

func TestHelloSignVerify(t *testing.T) {
	t.Parallel()
	p := HelloSign()
	keys := keysFor(t, p, hellosignVectorKey)
	signedReq := func(secret string) *Request {
		d, err := SignDelivery(p, SignInput{Body: hellosignExampleBody("sr_1"), Timestamp: fixedNow}, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		return &Request{Method: "POST", Headers: d.Headers, Body: d.Body}
	}
	good := signedReq(hellosignVectorKey)
	tampered := strings.Replace(hellosignVectorJSON, "1669926463", "1669926464", 1)
	for _, tc := range []struct {
		name       string
		req        *Request
		keys       []Key
		wantReason Reason
		wantKey    string
	}{
		{name: "accepted (multipart, as sent)", req: good, keys: keys, wantKey: "k0"},
		{name: "accepted (vector, urlencoded)", req: hellosignForm(hellosignVectorJSON), keys: keys, wantKey: "k0"},
		{name: "accepted (vector, multipart)", req: hellosignMultipart(t, hellosignVectorJSON), keys: keys, wantKey: "k0"},
		{name: "accepted (vector, raw JSON)", req: &Request{Method: "POST", Body: []byte(hellosignVectorJSON)}, keys: keys, wantKey: "k0"},
		{name: "event_time tampered", req: hellosignForm(tampered), keys: keys, wantReason: ReasonSignatureMismatch},
		{name: "event_type tampered", req: hellosignForm(strings.Replace(hellosignVectorJSON, "account_confirmed", "account_confirmeD", 1)), keys: keys, wantReason: ReasonSignatureMismatch},
		{name: "wrong key", req: good, keys: keysFor(t, p, hellosignSecret2), wantReason: ReasonSignatureMismatch},
		{name: "rotation: second key matches", req: good, keys: keysFor(t, p, hellosignSecret2, hellosignVectorKey), wantKey: "k1"},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "missing json field", req: &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, Body: []byte("x=1")}, keys: keys, wantReason: ReasonMissingSignature},
		{name: "multipart without json field", req: &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "multipart/form-data; boundary=b"}}, Body: []byte("--b--\r\n")}, keys: keys, wantReason: ReasonMissingSignature},
		{name: "json field not JSON", req: hellosignForm("nope"), keys: keys, wantReason: ReasonMissingSignature},
		{name: "no event_hash", req: hellosignForm(`{"event":{"event_type":"a","event_time":"1"}}`), keys: keys, wantReason: ReasonMalformedSignature},
		{name: "uppercase event_hash", req: hellosignForm(strings.Replace(hellosignVectorJSON, "ff8b0343", "FF8B0343", 1)), keys: keys, wantReason: ReasonMalformedSignature},
		{name: "numeric event_time", req: hellosignForm(`{"event":{"event_type":"account_confirmed","event_time":1669926463,"event_hash":"ff8b03439122f9160500c3fb855bdee5a9ccba5fff27d3b258745d8f3074832f"}}`), keys: keys, wantReason: ReasonMissingSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, tc.keys, Params{})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && !strings.HasPrefix(res.EventID, "json-sha256:") {
				t.Fatalf("EventID = %q", res.EventID)
			}
		})
	}
	// The identity is the same for the same event in any envelope.
	a, _ := p.Verify(hellosignForm(hellosignVectorJSON), keys, Params{})
	b, _ := p.Verify(hellosignMultipart(t, hellosignVectorJSON), keys, Params{})
	if a.EventID == "" || a.EventID != b.EventID {
		t.Fatalf("identities differ: %q %q", a.EventID, b.EventID)
	}
	checkSecretsRefused(t, p, "", hellosignVectorKey+"\n")
}

func TestHelloSignSignBody(t *testing.T) {
	t.Parallel()
	p := HelloSign()
	body, err := p.SignBody(SignInput{Body: []byte(`{"event":{"event_type":"account_confirmed","event_time":"1669926463"}}`)}, []string{hellosignVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"event_hash":"ff8b03439122f9160500c3fb855bdee5a9ccba5fff27d3b258745d8f3074832f"`) {
		t.Fatalf("SignBody = %s", body)
	}
	for _, bad := range []string{`[]`, `{}`, `{"event":{}}`, `{"event":{"event_type":"x"}}`} {
		if _, err := p.SignBody(SignInput{Body: []byte(bad)}, []string{hellosignVectorKey}); err == nil {
			t.Fatalf("SignBody(%s) succeeded", bad)
		}
	}
}

func FuzzHelloSignBody(f *testing.F) {
	f.Add("multipart/form-data; boundary=b", []byte("--b\r\nContent-Disposition: form-data; name=\"json\"\r\n\r\n"+hellosignVectorJSON+"\r\n--b--\r\n"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		p := HelloSign()
		req := &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: ct}}, Body: body}
		res, err := p.Verify(req, keysFor(t, p, hellosignVectorKey), Params{})
		checkAnswer(t, err)
		if err == nil && res.KeyID != "k0" {
			t.Fatalf("accepted without the key: %+v", res)
		}
	})
}
