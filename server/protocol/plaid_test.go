package protocol

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Vectors:
//   - No Plaid-published JWT with its key exists (Plaid's keys come from its API), so the fixed
//     token below was made with an independent implementation (Python "cryptography", ECDSA
//     P-256/SHA-256, r||s) from a test key derived from SHA-256("hookverify plaid test key").
//   - The ES256 primitive is also checked against RFC 7515 Appendix A.3 (the published ES256 JWS
//     and its public key).
//   - The steps (kid lookup, alg must be ES256, iat at most 5 minutes old, request_body_sha256
//     compared in constant time) follow https://plaid.com/docs/api/webhooks/webhook-verification/.
const (
	plaidTestKid  = "6c5516e1-92dc-479e-a8ff-5a51992e0001"
	plaidTestX    = "TbYK70cEWhMzequ7WxMtmJwfAvIVZYf2QxlHKihuiUU"
	plaidTestY    = "pqMZ332Ev2CC-2fXa99vzgqJXnqmMBlRmWYu7h8RLCw"
	plaidTestD    = "TfouuHC05VG2q2n8jZkFLPaj6te2Q0xS0yNkbytndeY"
	plaidTestBody = "{\n  \"environment\": \"sandbox\",\n  \"item_id\": \"DWVAAPWq4RHGlEaNyGKRTAnPLaEmo8Cvq7na6\",\n  \"webhook_code\": \"SYNC_UPDATES_AVAILABLE\",\n  \"webhook_type\": \"TRANSACTIONS\"\n}"
	plaidTestJWT  = "eyJhbGciOiJFUzI1NiIsImtpZCI6IjZjNTUxNmUxLTkyZGMtNDc5ZS1hOGZmLTVhNTE5OTJlMDAwMSIsInR5cCI6IkpXVCJ9." +
		"eyJpYXQiOjE3MDAwMDAwMDAsInJlcXVlc3RfYm9keV9zaGEyNTYiOiIyMGJkNjk0Y2IwOWU2NTYyNDRlN2YzZjBmZDhkYzk3MWZkOGExZmEzMThlNjJjMDg1NTljOWI1OTQ2ZGIyMzgyIn0." +
		"tqe_c63FaUk4Ht-Po6xkuIwYOh2gEPqeekc0cnmGAsHW1tOXX4CuQE0VjoTV0gxFpTgaW2rI08IiXevnJa6cSw"
)

var (
	plaidTestPublic  = `{"alg":"ES256","created_at":1560466150,"crv":"P-256","expired_at":null,"kid":"` + plaidTestKid + `","kty":"EC","use":"sig","x":"` + plaidTestX + `","y":"` + plaidTestY + `"}`
	plaidTestPrivate = `{"crv":"P-256","kid":"` + plaidTestKid + `","kty":"EC","x":"` + plaidTestX + `","y":"` + plaidTestY + `","d":"` + plaidTestD + `"}`
)

func plaidRequest(jwt, body string) *Request {
	return &Request{Method: "POST", Headers: Headers{{Name: "Plaid-Verification", Value: jwt}}, Body: []byte(body)}
}

// plaidRaw signs header and claims JSON with the private JWK, as an attacker with the key or a
// test wanting odd claims would.
func plaidRaw(t testing.TB, private, header, claims string) string {
	t.Helper()
	k, _, err := plaidParseJWK(private)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := plaidDecodeCoord(k.D)
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	in := enc([]byte(header)) + "." + enc([]byte(claims))
	digest := sha256.Sum256([]byte(in))
	r, s, err := ecdsa.Sign(rand.Reader, priv, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return in + "." + enc(sig)
}

func plaidBodyHex(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// plaidTokenIat returns the iat of the JWT's claims as written.
func plaidTokenIat(t testing.TB, jwt string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Iat json.Number `json:"iat"`
	}
	if err := json.Unmarshal(claims, &c); err != nil {
		t.Fatal(err)
	}
	return c.Iat.String()
}

func plaidClaims(iat int64, body string) string {
	return `{"iat":` + strconv.FormatInt(iat, 10) + `,"request_body_sha256":"` + plaidBodyHex(body) + `"}`
}

const plaidHeaderJSON = `{"alg":"ES256","kid":"` + plaidTestKid + `","typ":"JWT"}`

func TestPlaidVerify(t *testing.T) {
	t.Parallel()
	p := Plaid()
	other, otherPublic, err := examplePlaidSecret()
	if err != nil {
		t.Fatal(err)
	}
	// A different key that claims the same kid.
	impostor, _, err := examplePlaidSecret()
	if err != nil {
		t.Fatal(err)
	}
	kidAt := strings.Index(impostor, `"kid":"`) + len(`"kid":"`)
	impostor = impostor[:kidAt] + plaidTestKid + impostor[kidAt+strings.IndexByte(impostor[kidAt:], '"'):]
	expiredPublic := strings.Replace(plaidTestPublic, `"expired_at":null`, `"expired_at":1699999000`, 1)
	laterExpiry := strings.Replace(plaidTestPublic, `"expired_at":null`, `"expired_at":1800000000`, 1)
	now := fixedNow.Unix()
	good := plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now, plaidTestBody))
	enc := base64.RawURLEncoding.EncodeToString
	hs256 := func() string {
		in := enc([]byte(`{"alg":"HS256","kid":"`+plaidTestKid+`"}`)) + "." + enc([]byte(plaidClaims(now, plaidTestBody)))
		return in + "." + enc(hmacSum(sha256.New, []byte(plaidTestPublic), adyenMessage(in)))
	}()
	none := enc([]byte(`{"alg":"none","kid":"`+plaidTestKid+`"}`)) + "." + enc([]byte(plaidClaims(now, plaidTestBody))) + "."
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
	}{
		{name: "independently signed token (Python cryptography)", req: plaidRequest(plaidTestJWT, plaidTestBody), keys: []string{plaidTestPublic}, params: Params{Now: time.Unix(1700000000, 0)}, wantKey: "k0"},
		{name: "accepted", req: plaidRequest(good, plaidTestBody), keys: []string{plaidTestPublic}, wantKey: "k0"},
		{name: "body tampered by one trailing space", req: plaidRequest(good, plaidTestBody+" "), keys: []string{plaidTestPublic}, wantReason: ReasonSignatureMismatch},
		{name: "wrong key, other kid", req: plaidRequest(good, plaidTestBody), keys: []string{otherPublic}, wantReason: ReasonSignatureMismatch},
		{name: "signed by another key claiming our kid", req: plaidRequest(plaidRaw(t, impostor, plaidHeaderJSON, plaidClaims(now, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: plaidRequest(good, plaidTestBody), wantReason: ReasonSignatureMismatch},
		{name: "rotation: kid picks the second key", req: plaidRequest(good, plaidTestBody), keys: []string{otherPublic, plaidTestPublic}, wantKey: "k1"},
		{name: "rotation: new key's token", req: plaidRequest(func() string {
			h, _ := signPlaid(SignInput{Body: []byte(plaidTestBody), Timestamp: fixedNow}, []string{other})
			return h[0].Value
		}(), plaidTestBody), keys: []string{plaidTestPublic, otherPublic}, wantKey: "k1"},
		{name: "key expired before now", req: plaidRequest(good, plaidTestBody), keys: []string{expiredPublic}, wantReason: ReasonSignatureMismatch},
		{name: "key expiring later still verifies", req: plaidRequest(good, plaidTestBody), keys: []string{laterExpiry}, wantKey: "k0"},
		{name: "missing header", req: &Request{Body: []byte(plaidTestBody)}, keys: []string{plaidTestPublic}, wantReason: ReasonMissingSignature},
		{name: "empty header", req: plaidRequest("", plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "two parts", req: plaidRequest(good[:strings.LastIndexByte(good, '.')], plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "alg none", req: plaidRequest(none, plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "alg HS256 keyed with the public JWK", req: plaidRequest(hs256, plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "alg es256 lowercase", req: plaidRequest(plaidRaw(t, plaidTestPrivate, `{"alg":"es256","kid":"`+plaidTestKid+`"}`, plaidClaims(now, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "alg ES384", req: plaidRequest(plaidRaw(t, plaidTestPrivate, `{"alg":"ES384","kid":"`+plaidTestKid+`"}`, plaidClaims(now, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "no alg", req: plaidRequest(plaidRaw(t, plaidTestPrivate, `{"kid":"`+plaidTestKid+`"}`, plaidClaims(now, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "no kid", req: plaidRequest(plaidRaw(t, plaidTestPrivate, `{"alg":"ES256"}`, plaidClaims(now, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "header not JSON", req: plaidRequest(enc([]byte("x"))+good[strings.IndexByte(good, '.'):], plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "padded base64 signature", req: plaidRequest(good+"==", plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "DER signature instead of r||s", req: plaidRequest(good[:strings.LastIndexByte(good, '.')+1]+enc(make([]byte, 70)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "claims tampered", req: plaidRequest(strings.Replace(good, good[strings.IndexByte(good, '.')+1:strings.LastIndexByte(good, '.')], enc([]byte(plaidClaims(now, "{}"))), 1), "{}"), keys: []string{plaidTestPublic}, wantReason: ReasonSignatureMismatch},
		{name: "no request_body_sha256", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, `{"iat":`+strconv.FormatInt(now, 10)+`}`), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "uppercase request_body_sha256", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, `{"iat":`+strconv.FormatInt(now, 10)+`,"request_body_sha256":"`+strings.ToUpper(plaidBodyHex(plaidTestBody))+`"}`), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonSignatureMismatch},
		{name: "request_body_sha256 not a string", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, `{"iat":`+strconv.FormatInt(now, 10)+`,"request_body_sha256":1}`), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedSignature},
		{name: "hash of another body", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now, "{}")), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonSignatureMismatch},
		{name: "no iat", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, `{"request_body_sha256":"`+plaidBodyHex(plaidTestBody)+`"}`), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMissingTimestamp},
		{name: "fractional iat", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, strings.Replace(plaidClaims(now, plaidTestBody), `"iat":`+strconv.FormatInt(now, 10), `"iat":1700000000.5`, 1)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now-301, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now+301, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "exactly 5 minutes old", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now-300, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantKey: "k0"},
		{name: "bad signature beats stale iat", req: plaidRequest(plaidRaw(t, impostor, plaidHeaderJSON, plaidClaims(now-3600, plaidTestBody)), plaidTestBody), keys: []string{plaidTestPublic}, wantReason: ReasonSignatureMismatch},
		{name: "body not a JSON object", req: plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now, "[]")), "[]"), keys: []string{plaidTestPublic}, wantReason: ReasonMalformedPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: 300 * time.Second}
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != "iat:"+plaidTokenIat(t, header(tc.req, "Plaid-Verification"))+":"+bodySHA256ID(tc.req.Body) {
				t.Fatalf("EventID = %q", res.EventID)
			}
		})
	}
}

// TestPlaidES256RFC7515 checks the ES256 primitive against RFC 7515 Appendix A.3.
func TestPlaidES256RFC7515(t *testing.T) {
	t.Parallel()
	const jws = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ." +
		"DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
	x, _ := plaidDecodeCoord("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")
	y, _ := plaidDecodeCoord("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")
	point := append(append([]byte{4}, x...), y...)
	sig, err := base64.RawURLEncoding.DecodeString(jws[strings.LastIndexByte(jws, '.')+1:])
	if err != nil {
		t.Fatal(err)
	}
	in := jws[:strings.LastIndexByte(jws, '.')]
	if !plaidVerifySig(point, in, sig) {
		t.Fatal("RFC 7515 A.3 does not verify")
	}
	if plaidVerifySig(point, in+"x", sig) {
		t.Fatal("a changed signing input verifies")
	}
}

func TestPlaidSignRoundTrip(t *testing.T) {
	t.Parallel()
	p := Plaid()
	h, err := p.Sign(SignInput{Body: []byte(plaidTestBody), Timestamp: fixedNow}, []string{plaidTestPrivate, "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	req := plaidRequest(h[0].Value, plaidTestBody)
	res, err := p.Verify(req, keysFor(t, p, plaidTestPublic), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte("{}"), Timestamp: fixedNow}, nil},
		{"no timestamp", SignInput{Body: []byte("{}")}, []string{plaidTestPrivate}},
		{"public key only", SignInput{Body: []byte("{}"), Timestamp: fixedNow}, []string{plaidTestPublic}},
		{"not a JWK", SignInput{Body: []byte("{}"), Timestamp: fixedNow}, []string{"pem?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}

func TestPlaidParseSecret(t *testing.T) {
	t.Parallel()
	p := Plaid()
	signing, verifying, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ParseSecret(verifying); err != nil {
		t.Fatalf("example public JWK refused: %v", err)
	}
	if _, err := p.ParseSecret(signing); err == nil {
		t.Fatal("a private JWK was accepted as a verifying secret")
	}
	offCurve := strings.Replace(plaidTestPublic, plaidTestY, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE", 1)
	for name, bad := range map[string]string{
		"empty":          "",
		"not JSON":       "-----BEGIN PUBLIC KEY-----",
		"trailing data":  plaidTestPublic + "{}",
		"RSA":            strings.Replace(plaidTestPublic, `"kty":"EC"`, `"kty":"RSA"`, 1),
		"P-384":          strings.Replace(plaidTestPublic, `"crv":"P-256"`, `"crv":"P-384"`, 1),
		"alg RS256":      strings.Replace(plaidTestPublic, `"alg":"ES256"`, `"alg":"RS256"`, 1),
		"no kid":         strings.Replace(plaidTestPublic, `"kid":"`+plaidTestKid+`"`, `"kid":""`, 1),
		"short x":        strings.Replace(plaidTestPublic, plaidTestX, plaidTestX[:20], 1),
		"off the curve":  offCurve,
		"bad expired_at": strings.Replace(plaidTestPublic, `"expired_at":null`, `"expired_at":"soon"`, 1),
		"private key":    plaidTestPrivate,
	} {
		if _, err := p.ParseSecret(bad); err == nil || !strings.Contains(err.Error(), "invalid secret") {
			t.Errorf("%s: ParseSecret = %v", name, err)
		} else if strings.Contains(err.Error(), plaidTestD) || strings.Contains(err.Error(), plaidTestX) {
			t.Errorf("%s: error %q echoes the key", name, err)
		}
	}
}

func FuzzPlaidVerification(f *testing.F) {
	p := Plaid()
	keys := keysFor(f, p, plaidTestPublic)
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	f.Add(plaidTestJWT, []byte(plaidTestBody), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, jwt string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(plaidRequest(jwt, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = parsePlaidJWT(jwt)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, plaidTestPrivate)
		checkMutation(t, p, keys, params, req, "Plaid-Verification", pos, repl)
	})
}

// TestPlaidRepeatedNotificationsAreDistinct: Plaid fires SYNC_UPDATES_AVAILABLE whenever an
// Item's transactions change, and its body (environment, item_id, webhook_type, webhook_code and
// the two completion flags; SyncUpdatesAvailableWebhook in Plaid's clients) is the same every
// time once the history is loaded. Keyed on the body alone, every later update inside the dedupe
// window would be answered DUPLICATE and the app would never sync again. The signed iat tells
// them apart; the same token forwarded twice stays one event.
func TestPlaidRepeatedNotificationsAreDistinct(t *testing.T) {
	t.Parallel()
	p := Plaid()
	keys := keysFor(t, p, plaidTestPublic)
	body := `{"environment":"production","historical_update_complete":true,"initial_update_complete":true,"item_id":"DWVAAPWq4RHGlEaNyGKRTAnPLaEmo8Cvq7na6","webhook_code":"SYNC_UPDATES_AVAILABLE","webhook_type":"TRANSACTIONS"}`
	first := fixedNow
	later := fixedNow.Add(6 * time.Hour)
	tokFirst := plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(first.Unix(), body))
	tokLater := plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(later.Unix(), body))
	id := func(tok string, now time.Time) string { return eventIDOf(t, p, keys, plaidRequest(tok, body), now) }
	r1, r2 := id(tokFirst, first), id(tokLater, later)
	if r1 == r2 {
		t.Fatalf("two SYNC_UPDATES_AVAILABLE notifications six hours apart share the identity %q", r1)
	}
	if again := id(tokFirst, first.Add(time.Second)); again != r1 {
		t.Fatalf("one delivery forwarded twice has identities %q and %q", r1, again)
	}
}

// TestPlaidSecretTrailingData: a Plaid key is one JWK JSON object. One followed by anything but
// white space is not JSON and must be refused, as "x" after it already was; dec.More() let a
// closing "}" or "]" through, so a mangled paste was stored as if it were the key.
func TestPlaidSecretTrailingData(t *testing.T) {
	t.Parallel()
	p := Plaid()
	_, jwk, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{jwk, " " + jwk + "\n"} {
		if _, err := p.ParseSecret(s); err != nil {
			t.Fatalf("ParseSecret(the JWK with white space) = %v", err)
		}
	}
	for _, suffix := range []string{"}", "]", "x", " }", "{}", `,"kid":"other"}`} {
		if _, err := p.ParseSecret(jwk + suffix); err == nil {
			t.Errorf("ParseSecret(JWK + %q) accepted", suffix)
		}
	}
}
