package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// Published vectors, each recomputed independently (Python hmac with the hex-decoded key):
//   - Adyen's docs example, also in Adyen/adyen-ruby-api-library spec/utils/hmac_validator_spec.rb:
//     key 44782DEF...BA056, item 7914073381342284 / TestMerchant / TestPayment-1407325143704 / 1130
//     EUR / AUTHORISATION / true -> coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=;
//   - Adyen/adyen-go-api-library src/hmacvalidator/hmacvalidator_test.go: key DFB1EB54...AB00,
//     "pspReference:originalReference:merchantAccount:reference:1000:EUR:EVENT:true" ->
//     ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc=;
//   - Adyen/adyen-ruby-api-library spec/mocks/responses/Webhooks/colon_webhook.json and
//     mixed_webhook.json (key 74F490DD...9174): values containing ':' and '\' are signed raw.
const (
	adyenDocsKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	adyenGoKey   = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	adyenRubyKey = "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174"
	adyenDocsID  = "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"
)

const adyenDocsItem = `{"additionalData":{"hmacSignature":"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="},"amount":{"value":1130,"currency":"EUR"},` +
	`"pspReference":"7914073381342284","eventCode":"AUTHORISATION","merchantAccountCode":"TestMerchant",` +
	`"merchantReference":"TestPayment-1407325143704","paymentMethod":"visa","success":"true"}`

const adyenGoItem = `{"additionalData":{"hmacSignature":"ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="},"amount":{"currency":"EUR","value":1000},` +
	`"eventCode":"EVENT","eventDate":"1970-01-01T00:00:00Z","merchantAccountCode":"merchantAccount","merchantReference":"reference",` +
	`"originalReference":"originalReference","paymentMethod":"VISA","pspReference":"pspReference","reason":"reason","success":"true"}`

const adyenColonItem = `{"additionalData":{"hmacSignature":"2EQYm7YJpKO4EtHSPu55SQTyWf8dkW5u2nD1tJFpViA=","paymentMethod":"visa"},` +
	`"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","eventDate":"2023-01-10T13:40:54+01:00",` +
	`"merchantAccountCode":"AntoniStroinski","merchantReference":":slashes are fun","pspReference":"M8NB66SBZSGLNK82",` +
	`"reason":"039404:1111:03/2030","success":"true"}`

const adyenMixedItem = `{"additionalData":{"hmacSignature":"CZErGCNQaSsxbaQfZaJlakqo7KPP+mIa8a+wx3yNs9A="},` +
	`"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","merchantAccountCode":"AntoniStroinski",` +
	`"merchantReference":"\\:/\\/slashes are fun","pspReference":"ZVWN7D3WSMK2WN82","success":"true"}`

func adyenBody(items ...string) []byte {
	wrapped := make([]string, len(items))
	for i, it := range items {
		wrapped[i] = `{"NotificationRequestItem":` + it + `}`
	}
	return []byte(`{"live":"false","notificationItems":[` + strings.Join(wrapped, ",") + `]}`)
}

// adyenSign signs the raw item JSON with key through SignBody and returns the item again.
func adyenSignItem(t testing.TB, item, key string) string {
	t.Helper()
	body, err := signAdyenBody(SignInput{Body: adyenBody(item)}, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(body, []byte(`{"NotificationRequestItem":`)) + len(`{"NotificationRequestItem":`)
	return string(body[start : len(body)-3])
}

func TestAdyenVerify(t *testing.T) {
	t.Parallel()
	p := Adyen()
	otherKey := strings.Repeat("AB", 32)
	docsForOther := adyenSignItem(t, adyenDocsItem, otherKey)
	second := adyenSignItem(t, strings.Replace(adyenDocsItem, "7914073381342284", "8814073381342285", 1), adyenDocsKey)
	tests := []struct {
		name       string
		body       []byte
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted (docs vector)", body: adyenBody(adyenDocsItem), keys: []string{adyenDocsKey}, wantKey: "k0", wantEvent: adyenDocsID},
		{name: "Go library vector", body: adyenBody(adyenGoItem), keys: []string{adyenGoKey}, wantKey: "k0", wantEvent: "pspReference:originalReference:merchantAccount:reference:1000:EUR:EVENT:true"},
		{name: "colon in a value signed raw (ruby library mock)", body: adyenBody(adyenColonItem), keys: []string{adyenRubyKey}, wantKey: "k0", wantEvent: "M8NB66SBZSGLNK82::AntoniStroinski::slashes are fun:1000:EUR:AUTHORISATION:true"},
		{name: "colons and backslashes signed raw (ruby library mock)", body: adyenBody(adyenMixedItem), keys: []string{adyenRubyKey}, wantKey: "k0", wantEvent: `ZVWN7D3WSMK2WN82::AntoniStroinski:\:/\/slashes are fun:1000:EUR:AUTHORISATION:true`},
		{name: "lowercase key", body: adyenBody(adyenDocsItem), keys: []string{strings.ToLower(adyenDocsKey)}, wantKey: "k0", wantEvent: adyenDocsID},
		{name: "amount tampered", body: adyenBody(strings.Replace(adyenDocsItem, "1130", "1131", 1)), keys: []string{adyenDocsKey}, wantReason: ReasonSignatureMismatch},
		{name: "success tampered", body: adyenBody(strings.Replace(adyenDocsItem, `"success":"true"`, `"success":"false"`, 1)), keys: []string{adyenDocsKey}, wantReason: ReasonSignatureMismatch},
		{name: "pspReference tampered", body: adyenBody(strings.Replace(adyenDocsItem, "7914073381342284", "7914073381342285", 1)), keys: []string{adyenDocsKey}, wantReason: ReasonSignatureMismatch},
		{name: "success as a JSON boolean signs the same", body: adyenBody(strings.Replace(adyenDocsItem, `"success":"true"`, `"success":true`, 1)), keys: []string{adyenDocsKey}, wantKey: "k0", wantEvent: adyenDocsID},
		{name: "unsigned field changed is not detected (body not authenticated)", body: adyenBody(strings.Replace(adyenDocsItem, `"visa"`, `"mc"`, 1)), keys: []string{adyenDocsKey}, wantKey: "k0", wantEvent: adyenDocsID},
		{name: "wrong secret", body: adyenBody(adyenDocsItem), keys: []string{otherKey}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", body: adyenBody(adyenDocsItem), wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key", body: adyenBody(adyenDocsItem), keys: []string{adyenDocsKey, otherKey}, wantKey: "k0", wantEvent: adyenDocsID},
		{name: "rotation: new key", body: adyenBody(docsForOther), keys: []string{adyenDocsKey, otherKey}, wantKey: "k1", wantEvent: adyenDocsID},
		{name: "two items, both valid", body: adyenBody(adyenDocsItem, second), keys: []string{adyenDocsKey}, wantKey: "k0", wantEvent: "items-sha256:" + hex.EncodeToString(func() []byte {
			s := sha256.Sum256([]byte(adyenDocsID + "\n8814073381342285::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"))
			return s[:]
		}())},
		{name: "two items, second forged", body: adyenBody(adyenDocsItem, strings.Replace(second, "1130", "9999", 1)), keys: []string{adyenDocsKey}, wantReason: ReasonSignatureMismatch},
		{name: "two items signed by different keys", body: adyenBody(adyenDocsItem, docsForOther), keys: []string{adyenDocsKey, otherKey}, wantReason: ReasonSignatureMismatch},
		{name: "second item unsigned", body: adyenBody(adyenDocsItem, `{"pspReference":"x","eventCode":"y"}`), keys: []string{adyenDocsKey}, wantReason: ReasonMissingSignature},
		{name: "missing hmacSignature", body: adyenBody(`{"pspReference":"x","eventCode":"y","additionalData":{}}`), keys: []string{adyenDocsKey}, wantReason: ReasonMissingSignature},
		{name: "hmacSignature not base64", body: adyenBody(strings.Replace(adyenDocsItem, "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=", "invalidHMACsign", 1)), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedSignature},
		{name: "hmacSignature not a string", body: adyenBody(strings.Replace(adyenDocsItem, `"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="`, `7`, 1)), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedSignature},
		{name: "amount value not an integer", body: adyenBody(strings.Replace(adyenDocsItem, "1130", "1130.0", 1)), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedSignature},
		{name: "signed field of the wrong type", body: adyenBody(strings.Replace(adyenDocsItem, `"TestMerchant"`, `["TestMerchant"]`, 1)), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedSignature},
		{name: "not JSON", body: []byte("[accepted]"), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedPayload},
		{name: "no notificationItems", body: []byte(`{"live":"false"}`), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedPayload},
		{name: "empty notificationItems", body: []byte(`{"live":"false","notificationItems":[]}`), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedPayload},
		{name: "item without wrapper", body: []byte(`{"notificationItems":[` + adyenDocsItem + `]}`), keys: []string{adyenDocsKey}, wantReason: ReasonMalformedPayload},
		{name: "empty body", body: nil, keys: []string{adyenDocsKey}, wantReason: ReasonMalformedPayload},
		{name: "no pspReference", body: adyenBody(adyenSignItem(t, `{"eventCode":"AUTHORISATION","success":"true"}`, adyenDocsKey)), keys: []string{adyenDocsKey}, wantReason: ReasonMissingEventID},
		{name: "no amount signs empty value and currency", body: adyenBody(adyenSignItem(t, `{"pspReference":"p","eventCode":"REPORT_AVAILABLE","success":"true"}`, adyenDocsKey)), keys: []string{adyenDocsKey}, wantKey: "k0", wantEvent: "p::::::REPORT_AVAILABLE:true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{Method: "POST", Body: tc.body}
			res, err := p.Verify(req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

func TestAdyenSignBodyReproducesVector(t *testing.T) {
	t.Parallel()
	unsigned := strings.Replace(adyenDocsItem, `"hmacSignature":"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="`, `"authCode":"1"`, 1)
	got := adyenSignItem(t, unsigned, adyenDocsKey)
	if !strings.Contains(got, `"hmacSignature":"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="`) || !strings.Contains(got, `"authCode":"1"`) {
		t.Fatalf("signed item %s", got)
	}
	sum := base64.StdEncoding.EncodeToString(hmacSum(sha256.New, mustHex(t, adyenGoKey), adyenMessage("pspReference:originalReference:merchantAccount:reference:1000:EUR:EVENT:true")))
	if sum != "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc=" {
		t.Fatalf("HMAC = %s", sum)
	}
	for _, tc := range []struct {
		name    string
		body    string
		secrets []string
	}{
		{"no secrets", string(adyenBody(adyenDocsItem)), nil},
		{"key not hex", string(adyenBody(adyenDocsItem)), []string{"not-hex"}},
		{"not JSON", "x", []string{adyenDocsKey}},
		{"no items", `{"notificationItems":[]}`, []string{adyenDocsKey}},
		{"bad item", `{"notificationItems":[{"x":1}]}`, []string{adyenDocsKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := SignDelivery(Adyen(), SignInput{Body: []byte(tc.body)}, tc.secrets); err == nil {
				t.Fatal("SignDelivery succeeded")
			}
		})
	}
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAdyenParseSecret(t *testing.T) {
	t.Parallel()
	p := Adyen()
	s, v, err := p.ExampleSecret()
	if err != nil || s != v || len(s) != 64 || strings.ToUpper(s) != s {
		t.Fatalf("ExampleSecret = %q, %q, %v", s, v, err)
	}
	key, err := p.ParseSecret(adyenDocsKey)
	if err != nil || len(key) != 32 {
		t.Fatalf("ParseSecret = %x, %v", key, err)
	}
	for _, bad := range []string{"", "XYZ", "ABC", "ABCD", " " + adyenDocsKey} {
		if _, err := p.ParseSecret(bad); err == nil || (len(bad) > 8 && strings.Contains(err.Error(), strings.TrimSpace(bad))) {
			t.Errorf("ParseSecret(%q) = %v", bad, err)
		}
	}
}

// FuzzAdyenBody: any body gets an acceptance or a *Rejection, and a notification we signed
// stops authenticating when one byte of its signature or of a signed field changes, unless the
// change leaves every signed string as it was.
func FuzzAdyenBody(f *testing.F) {
	p := Adyen()
	keys := keysFor(f, p, adyenDocsKey)
	f.Add(adyenBody(adyenDocsItem), "ref-1", uint16(0), byte('x'))
	f.Add(adyenBody(adyenColonItem, adyenMixedItem), `a:\b`, uint16(77), byte('1'))
	f.Fuzz(func(t *testing.T, body []byte, ref string, pos uint16, repl byte) {
		_, err := p.Verify(&Request{Body: body}, keys, Params{Now: fixedNow})
		checkAnswer(t, err)

		item := `{"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","merchantAccountCode":"M",` +
			`"merchantReference":` + mailgunQ(ref) + `,"pspReference":"P1","success":"true"}`
		signedBody, err := signAdyenBody(SignInput{Body: adyenBody(item)}, []string{adyenDocsKey})
		if err != nil {
			t.Fatal(err)
		}
		good, err := p.Verify(&Request{Body: signedBody}, keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatalf("own signature rejected: %v", err)
		}
		i := int(pos) % len(signedBody)
		if signedBody[i] == repl {
			return
		}
		mutated := append([]byte(nil), signedBody...)
		mutated[i] = repl
		res, err := p.Verify(&Request{Body: mutated}, keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		if err == nil && res.EventID != good.EventID {
			t.Fatalf("accepted a changed signed field with byte %d -> %q: %+v", i, repl, res)
		}
	})
}
