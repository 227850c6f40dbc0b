package protocol

import (
	"testing"
)

// Trello publishes no vector; trelloVectorSig follows the documented algorithm (base64 HMAC-SHA1
// of body + callbackURL) and was computed independently:
// printf '%s%s' "$body" "$url" | openssl dgst -sha1 -hmac trello-app-secret-vector -binary | base64
const (
	trelloSecret     = "trello-app-secret-one"
	trelloSecret2    = "trello-app-secret-two"
	trelloVectorKey  = "trello-app-secret-vector"
	trelloVectorURL  = "https://hooks.example.com/trello?memberID=14&mainModel=true"
	trelloVectorBody = `{"action":{"id":"51f9424bcd6e040f3c002412","type":"commentCard"}}`
	trelloVectorSig  = "9QNA/g3IgcJ0968CA4ElKlEQImE="
)

func trelloRequest(method, url, sig, body string) *Request {
	req := &Request{Method: method, URL: url, Body: []byte(body)}
	if sig != "" {
		req.Headers = Headers{{Name: "X-Trello-Webhook", Value: sig}}
	}
	return req
}

func TestTrelloVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Trello(), secret: trelloSecret, secret2: trelloSecret2, url: trelloVectorURL,
		sigHeader: "X-Trello-Webhook", eventID: "5a66a2b0c0ffee0000000001", wantEventID: "5a66a2b0c0ffee0000000001",
		malformed: []string{"", "zz", trelloVectorSig[:27], trelloVectorSig + "=", "sha1=" + trelloVectorSig, "\n" + trelloVectorSig[1:]},
		noIdentity: func(t *testing.T) *Request {
			return trelloRequest("POST", trelloVectorURL, signedHeader(t, Trello(), SignInput{Body: []byte(`{"model":{}}`), URL: trelloVectorURL}, trelloSecret, "X-Trello-Webhook"), `{"model":{}}`)
		},
	}.run(t)
}

func TestTrelloURL(t *testing.T) {
	t.Parallel()
	p := Trello()
	keys := keysFor(t, p, trelloVectorKey)
	for _, tc := range []struct {
		name, url  string
		wantReason Reason
	}{
		{name: "callbackURL exactly", url: trelloVectorURL},
		{name: "query reordered", url: "https://hooks.example.com/trello?mainModel=true&memberID=14", wantReason: ReasonSignatureMismatch},
		{name: "http instead of https", url: "http://hooks.example.com/trello?memberID=14&mainModel=true", wantReason: ReasonSignatureMismatch},
		{name: "explicit default port", url: "https://hooks.example.com:443/trello?memberID=14&mainModel=true", wantReason: ReasonSignatureMismatch},
		{name: "no query", url: "https://hooks.example.com/trello", wantReason: ReasonSignatureMismatch},
		{name: "empty URL", url: "", wantReason: ReasonSignatureMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := trelloRequest("POST", tc.url, trelloVectorSig, trelloVectorBody)
			res, err := p.Verify(req, keys, Params{})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
		})
	}
}

func TestTrelloHeadHandshake(t *testing.T) {
	t.Parallel()
	p := Trello()
	res, err := p.Verify(&Request{Method: "HEAD", URL: trelloVectorURL}, nil, Params{})
	if err != nil || res.Handshake == nil || res.Handshake.Status != 200 || len(res.Handshake.Body) != 0 || res.EventID != "" || res.KeyID != "" {
		t.Fatalf("HEAD = %+v, %v", res, err)
	}
	// A GET is not the creation check and carries no signature.
	req := trelloRequest("GET", trelloVectorURL, "", "")
	res, err = p.Verify(req, keysFor(t, p, trelloVectorKey), Params{})
	checkOutcome(t, res, err, ReasonMissingSignature, "", req)
}

func TestTrelloRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Trello()
	req := trelloRequest("POST", trelloVectorURL, trelloVectorSig, trelloVectorBody)
	res, err := p.Verify(req, keysFor(t, p, trelloVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "51f9424bcd6e040f3c002412" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	if got := signedHeader(t, p, SignInput{Body: []byte(trelloVectorBody), URL: trelloVectorURL}, trelloVectorKey, "X-Trello-Webhook"); got != trelloVectorSig {
		t.Fatalf("Sign = %q, want %q", got, trelloVectorSig)
	}
	if _, err := p.Sign(SignInput{Body: []byte(trelloVectorBody)}, []string{trelloVectorKey}); err == nil {
		t.Fatal("signed without a URL")
	}
	checkSecretsRefused(t, p, "", " trello-secret")
}

func FuzzTrelloSignatureHeader(f *testing.F) {
	f.Add(trelloVectorSig, []byte(trelloVectorBody), uint16(2), byte('+'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Trello(), trelloVectorKey, "X-Trello-Webhook", nil, sig, body, pos, repl, fixedNow, trelloVectorURL)
	})
}
