package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Vectors:
//   - mailgun/mailgun-go webhooks_test.go (getSignatureFields) signs timestamp "123456789" and token
//     "token" with the test key "webhook-signing-key" (mailgun_test.go); its expected signature is
//     computed in the test, so it was recomputed independently here (Python hmac):
//     3ce8f010058ab80b8345d3513acc9027d34a00190ae8e4b4161e7636f68321f8. The same test's bad
//     signature hex("badsignature") must fail.
//   - No published vector with a known key was found in Mailgun's docs (the sample payload's
//     signature has no key), so the rest are built from the documented algorithm.
const (
	mailgunKey    = "c3b9f4a1d2e85f6071a2b3c4d5e6f708"
	mailgunKeyNew = "key-0123456789abcdef0123456789abcdef"
	mailgunSDKKey = "webhook-signing-key"
	mailgunSDKSig = "3ce8f010058ab80b8345d3513acc9027d34a00190ae8e4b4161e7636f68321f8"
)

var mailgunToken = strings.Repeat("a", 50)

// mailgunJSON builds a JSON delivery with the given signature fields (raw JSON values).
func mailgunJSON(ts, token, sig string) []byte {
	return []byte(`{"signature":{"timestamp":` + ts + `,"token":` + token + `,"signature":` + sig + `},"event-data":{"id":"evt-1","event":"delivered"}}`)
}

func mailgunSigned(t testing.TB, ts int64, token, key string) []byte {
	t.Helper()
	body, err := mailgunEmbed([]byte(`{"event-data":{"id":"evt-1","event":"delivered"}}`), []byte(key), strconv.FormatInt(ts, 10), token)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func mailgunQ(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestMailgunVerify(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	now := fixedNow.Unix()
	good := mailgunSigned(t, now, mailgunToken, mailgunKey)
	nowStr := strconv.FormatInt(now, 10)
	goodSig := "d3195db12b5d01946657afcde10b0adddd56eb2cc5ae7bdc6cfe0934d49205ea" // Python hmac over "1700000000" + 50×"a"
	sdkNow := time.Unix(123456789, 0)
	tests := []struct {
		name       string
		body       []byte
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
	}{
		{name: "accepted", body: good, keys: []string{mailgunKey}, wantKey: "k0"},
		{name: "accepted, independently computed signature", body: mailgunJSON(mailgunQ(nowStr), mailgunQ(mailgunToken), mailgunQ(goodSig)), keys: []string{mailgunKey}, wantKey: "k0"},
		{name: "mailgun-go vector", body: mailgunJSON(`"123456789"`, `"token"`, mailgunQ(mailgunSDKSig)), keys: []string{mailgunSDKKey}, params: Params{Now: sdkNow}, wantKey: "k0"},
		{name: "mailgun-go bad signature", body: mailgunJSON(`"123456789"`, `"token"`, mailgunQ("6261647369676e6174757265")), keys: []string{mailgunSDKKey}, params: Params{Now: sdkNow}, wantReason: ReasonMalformedSignature},
		{name: "legacy form body (mailgun-go vector)", body: []byte("event=delivered&signature=" + mailgunSDKSig + "&timestamp=123456789&token=token"), keys: []string{mailgunSDKKey}, params: Params{Now: sdkNow}, wantKey: "k0"},
		{name: "legacy form, repeated signature field", body: []byte("signature=" + mailgunSDKSig + "&signature=" + mailgunSDKSig + "&timestamp=123456789&token=token"), keys: []string{mailgunSDKKey}, params: Params{Now: sdkNow}, wantReason: ReasonMalformedSignature},
		{name: "token tampered", body: mailgunJSON(mailgunQ(nowStr), mailgunQ(mailgunToken[1:]+"b"), mailgunQ(goodSig)), keys: []string{mailgunKey}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", body: mailgunJSON(mailgunQ(strconv.FormatInt(now+1, 10)), mailgunQ(mailgunToken), mailgunQ(goodSig)), keys: []string{mailgunKey}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", body: good, keys: []string{mailgunKeyNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", body: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: first key", body: good, keys: []string{mailgunKey, mailgunKeyNew}, wantKey: "k0"},
		{name: "rotation: second key", body: good, keys: []string{mailgunKeyNew, mailgunKey}, wantKey: "k1"},
		{name: "missing signature object", body: []byte(`{"event-data":{"id":"x"}}`), keys: []string{mailgunKey}, wantReason: ReasonMissingSignature},
		{name: "missing signature field", body: []byte(`{"signature":{"timestamp":"1","token":"t"}}`), keys: []string{mailgunKey}, wantReason: ReasonMissingSignature},
		{name: "signature object is a string", body: []byte(`{"signature":"abc"}`), keys: []string{mailgunKey}, wantReason: ReasonMalformedSignature},
		{name: "signature not hex", body: mailgunJSON(mailgunQ(nowStr), mailgunQ(mailgunToken), mailgunQ(strings.Repeat("z", 64))), keys: []string{mailgunKey}, wantReason: ReasonMalformedSignature},
		{name: "signature uppercase", body: mailgunJSON(mailgunQ(nowStr), mailgunQ(mailgunToken), mailgunQ(strings.ToUpper(goodSig))), keys: []string{mailgunKey}, wantReason: ReasonMalformedSignature},
		{name: "signature a number", body: mailgunJSON(mailgunQ(nowStr), mailgunQ(mailgunToken), `1`), keys: []string{mailgunKey}, wantReason: ReasonMalformedSignature},
		{name: "empty token", body: mailgunJSON(mailgunQ(nowStr), `""`, mailgunQ(goodSig)), keys: []string{mailgunKey}, wantReason: ReasonMalformedSignature},
		{name: "token missing", body: []byte(`{"signature":{"timestamp":"1","signature":"` + goodSig + `"}}`), keys: []string{mailgunKey}, wantReason: ReasonMalformedSignature},
		{name: "timestamp missing", body: []byte(`{"signature":{"token":"t","signature":"` + goodSig + `"}}`), keys: []string{mailgunKey}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp a number", body: mailgunJSON(nowStr, mailgunQ(mailgunToken), mailgunQ(goodSig)), keys: []string{mailgunKey}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not decimal", body: mailgunJSON(mailgunQ("17e8"), mailgunQ(mailgunToken), mailgunQ(goodSig)), keys: []string{mailgunKey}, wantReason: ReasonMissingTimestamp},
		{name: "stale", body: mailgunSigned(t, now-int64(mailgunDefaultTolerance/time.Second)-1, mailgunToken, mailgunKey), keys: []string{mailgunKey}, params: Params{Now: fixedNow}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", body: mailgunSigned(t, now+int64(mailgunDefaultTolerance/time.Second)+1, mailgunToken, mailgunKey), keys: []string{mailgunKey}, params: Params{Now: fixedNow}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "late retry within 8 hours is not stale by default", body: mailgunSigned(t, now-8*3600, mailgunToken, mailgunKey), keys: []string{mailgunKey}, params: Params{Now: fixedNow}, wantKey: "k0"},
		{name: "endpoint tolerance of 5 minutes", body: mailgunSigned(t, now-301, mailgunToken, mailgunKey), keys: []string{mailgunKey}, params: Params{Now: fixedNow, Tolerance: 5 * time.Minute}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "bad signature beats stale timestamp", body: mailgunSigned(t, now-86400, mailgunToken, mailgunKeyNew), keys: []string{mailgunKey}, wantReason: ReasonSignatureMismatch},
		{name: "body not JSON", body: []byte(`{not json`), keys: []string{mailgunKey}, wantReason: ReasonMalformedPayload},
		{name: "body bad form", body: []byte(`a=%zz`), keys: []string{mailgunKey}, wantReason: ReasonMalformedPayload},
		{name: "empty body", body: nil, keys: []string{mailgunKey}, wantReason: ReasonMissingSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow}
			}
			req := &Request{Method: "POST", Body: tc.body}
			res, err := p.Verify(req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, req)
			if tc.wantReason == 0 && res.EventID == "" {
				t.Fatal("no event id")
			}
		})
	}
}

// TestMailgunIdentityIsTheSignedToken: event data swapped under a captured signature (which
// Mailgun's scheme cannot detect) keeps the genuine delivery's identity.
func TestMailgunIdentityIsTheSignedToken(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	keys := keysFor(t, p, mailgunKey)
	good := mailgunSigned(t, fixedNow.Unix(), mailgunToken, mailgunKey)
	forged := bytes.Replace(good, []byte(`"evt-1"`), []byte(`"evt-2"`), 1)
	a, err := p.Verify(&Request{Body: good}, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Verify(&Request{Body: forged}, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if a.EventID != mailgunToken || b.EventID != a.EventID {
		t.Fatalf("identities %q and %q, want both the token", a.EventID, b.EventID)
	}
}

func TestMailgunSignDelivery(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	for _, body := range [][]byte{ExampleBody(p, "evt-9"), []byte("event=delivered&recipient=a%40b.c")} {
		signed, err := SignDelivery(p, SignInput{Body: body, Timestamp: fixedNow}, []string{mailgunKey})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Verify(&Request{Headers: signed.Headers, Body: signed.Body}, keysFor(t, p, mailgunKey), Params{Now: fixedNow})
		if err != nil {
			t.Fatalf("%s: %v", signed.Body, err)
		}
		if len(res.EventID) != 50 {
			t.Fatalf("token identity %q is not 50 characters", res.EventID)
		}
	}
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte("{}"), Timestamp: fixedNow}, nil},
		{"no timestamp", SignInput{Body: []byte("{}")}, []string{mailgunKey}},
		{"bad JSON", SignInput{Body: []byte("{x"), Timestamp: fixedNow}, []string{mailgunKey}},
		{"invalid secret", SignInput{Body: []byte("{}"), Timestamp: fixedNow}, []string{"a b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := SignDelivery(p, tc.in, tc.secrets); err == nil {
				t.Fatal("SignDelivery succeeded")
			}
		})
	}
}

func TestMailgunParseSecret(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	s, v, err := p.ExampleSecret()
	if err != nil || s != v || len(s) != 32 {
		t.Fatalf("ExampleSecret = %q, %q, %v", s, v, err)
	}
	for _, ok := range []string{s, mailgunKeyNew} {
		if _, err := p.ParseSecret(ok); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []string{"", s + " ", "\n"} {
		if _, err := p.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
}

// FuzzMailgunBody drives the in-body signature parser: any body is answered with an acceptance
// or a *Rejection, and a delivery we signed stops authenticating when any byte of its
// signature, token or timestamp changes.
func FuzzMailgunBody(f *testing.F) {
	p := Mailgun()
	keys := keysFor(f, p, mailgunKey)
	params := Params{Now: fixedNow}
	f.Add(mailgunSigned(f, fixedNow.Unix(), mailgunToken, mailgunKey), "t0ken", uint16(0), byte('0'))
	f.Fuzz(func(t *testing.T, body []byte, token string, pos uint16, repl byte) {
		_, err := p.Verify(&Request{Body: body}, keys, params)
		checkAnswer(t, err)
		if token == "" || !utf8.ValidString(token) {
			return // Mailgun's tokens are hex; JSON cannot carry invalid UTF-8 unchanged
		}
		signedBody, err := mailgunEmbed([]byte(`{"event-data":{"id":"x"}}`), []byte(mailgunKey), strconv.FormatInt(fixedNow.Unix(), 10), token)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Verify(&Request{Body: signedBody}, keys, params); err != nil {
			t.Fatalf("own signature rejected: %v", err)
		}
		// Mutate one byte inside the signature object's value.
		start := bytes.Index(signedBody, []byte(`"signature":{`)) + len(`"signature":{`)
		end := start + bytes.IndexByte(signedBody[start:], '}')
		i := start + int(pos)%(end-start)
		if signedBody[i] == repl {
			return
		}
		mutated := append([]byte(nil), signedBody...)
		mutated[i] = repl
		res, err := p.Verify(&Request{Body: mutated}, keys, params)
		checkAnswer(t, err)
		if err == nil {
			// Only a change that leaves the signed fields as they were may pass (for example
			// an escape that decodes to the same token).
			s1, _ := mailgunFind(signedBody)
			s2, _ := mailgunFind(mutated)
			if s1 != s2 {
				t.Fatalf("accepted with byte %d changed to %q: %+v", i, repl, res)
			}
		}
	})
}
