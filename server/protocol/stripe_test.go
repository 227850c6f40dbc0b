package protocol

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"
)

const (
	stripeSecret    = "whsec_test_secret"
	stripeSecretNew = "whsec_test_secret_rolled_key"
	stripeBody      = `{"id":"evt_test_webhook","object":"event","type":"payment_intent.succeeded"}`
)

// stripeHeaderAt signs body at ts with the secrets, v1 entries in order.
func stripeHeaderAt(ts int64, body string, secrets ...string) string {
	h := "t=" + strconv.FormatInt(ts, 10)
	for _, s := range secrets {
		h += ",v1=" + stripeHex(ts, body, s)
	}
	return h
}

func stripeHex(ts int64, body, secret string) string {
	return hex.EncodeToString(webhook.ComputeSignature(time.Unix(ts, 0), []byte(body), secret))
}

func stripeRequest(sig, body string) *Request {
	return &Request{Method: "POST", Headers: Headers{{Name: "Stripe-Signature", Value: sig}}, Body: []byte(body)}
}

func TestStripeVerify(t *testing.T) {
	t.Parallel()
	p := Stripe()
	now := fixedNow.Unix()
	good := stripeHeaderAt(now, stripeBody, stripeSecret)
	wrongHex := strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		req        *Request
		keys       []string // secrets, as k0, k1, ...
		params     Params   // zero means Now=fixedNow, Tolerance=300s
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: stripeRequest(good, stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "body tampered by one trailing space", req: stripeRequest(good, stripeBody+" "), keys: []string{stripeSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: stripeRequest(strings.Replace(good, "t="+strconv.FormatInt(now, 10), "t="+strconv.FormatInt(now+1, 10), 1), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: stripeRequest(good, stripeBody), keys: []string{"whsec_someone_else"}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: stripeRequest(good, stripeBody), wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key matches", req: stripeRequest(stripeHeaderAt(now, stripeBody, stripeSecret, stripeSecretNew), stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "rotation: new key matches", req: stripeRequest(stripeHeaderAt(now, stripeBody, stripeSecret, stripeSecretNew), stripeBody), keys: []string{"whsec_retired", stripeSecretNew}, wantKey: "k1", wantEvent: "evt_test_webhook"},
		{name: "rotation: first key in order wins", req: stripeRequest(stripeHeaderAt(now, stripeBody, stripeSecret, stripeSecretNew), stripeBody), keys: []string{stripeSecretNew, stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "rotation: header signed with new only, key list has both", req: stripeRequest(stripeHeaderAt(now, stripeBody, stripeSecretNew), stripeBody), keys: []string{stripeSecret, stripeSecretNew}, wantKey: "k1", wantEvent: "evt_test_webhook"},
		{name: "several signatures, one matches", req: stripeRequest(good+",v1="+wrongHex+",v1="+wrongHex, stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "several signatures, none matches", req: stripeRequest(stripeHeaderAt(now, stripeBody)+",v1="+wrongHex+",v1="+wrongHex, stripeBody), keys: []string{stripeSecret}, wantReason: ReasonSignatureMismatch},
		{name: "v0 ignored beside v1", req: stripeRequest(good+",v0="+wrongHex, stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "unknown scheme ignored", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v9=whatever,"+good[strings.Index(good, "v1="):], stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "only v0", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v0="+stripeHex(now, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMissingSignature},
		{name: "malformed hex", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v1=zz"+wrongHex[2:], stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "short hex", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v1=abcd", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "empty v1", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v1=", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "uppercase hex", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v1="+strings.ToUpper(stripeHex(now, stripeBody, stripeSecret)), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed hex beside a matching v1", req: stripeRequest(good+",v1=not-hex", stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "malformed hex beside a wrong v1", req: stripeRequest("t="+strconv.FormatInt(now, 10)+",v1="+wrongHex+",v1=not-hex", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: &Request{Body: []byte(stripeBody)}, keys: []string{stripeSecret}, wantReason: ReasonMissingSignature},
		{name: "header name case-insensitive", req: &Request{Headers: Headers{{Name: "stripe-signature", Value: good}}, Body: []byte(stripeBody)}, keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "empty header", req: stripeRequest("", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "garbage header", req: stripeRequest("garbage", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "no t", req: stripeRequest("v1="+stripeHex(now, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "t not an integer", req: stripeRequest(strings.Replace(good, "t=", "t=x", 1), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "t empty", req: stripeRequest("t=,v1="+wrongHex, stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "t negative", req: stripeRequest("t=-1,v1="+wrongHex, stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "t with plus sign", req: stripeRequest("t=+"+strconv.FormatInt(now, 10)+",v1="+stripeHex(now, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "t overflows int64", req: stripeRequest("t=99999999999999999999,v1="+wrongHex, stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "t repeated", req: stripeRequest(good+",t=1", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "part without =", req: stripeRequest(good+",v1", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "trailing comma", req: stripeRequest(good+",", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "two = in a part", req: stripeRequest(good+",v0=a=b", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "v1,t= order (stripe-go's invalid header)", req: stripeRequest("v1,t=1", stripeBody), keys: []string{stripeSecret}, wantReason: ReasonMalformedSignature},
		{name: "stale", req: stripeRequest(stripeHeaderAt(now-301, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future (stripe-go would accept)", req: stripeRequest(stripeHeaderAt(now+301, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "exactly tolerance old is accepted", req: stripeRequest(stripeHeaderAt(now-300, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "exactly tolerance ahead is accepted", req: stripeRequest(stripeHeaderAt(now+300, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "half a second past the boundary", req: stripeRequest(stripeHeaderAt(now-300, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, params: Params{Now: fixedNow.Add(500 * time.Millisecond), Tolerance: 300 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "endpoint tolerance narrower than default", req: stripeRequest(stripeHeaderAt(now-20, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "zero tolerance means the default", req: stripeRequest(stripeHeaderAt(now-299, stripeBody, stripeSecret), stripeBody), keys: []string{stripeSecret}, params: Params{Now: fixedNow}, wantKey: "k0", wantEvent: "evt_test_webhook"},
		{name: "bad signature beats stale timestamp", req: stripeRequest(stripeHeaderAt(now-3600, stripeBody, "whsec_forger"), stripeBody), keys: []string{stripeSecret}, wantReason: ReasonSignatureMismatch},
		{name: "stale timestamp beats bad body", req: stripeRequest(stripeHeaderAt(now-3600, "not json", stripeSecret), "not json"), keys: []string{stripeSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "body not JSON", req: stripeRequest(stripeHeaderAt(now, "not json", stripeSecret), "not json"), keys: []string{stripeSecret}, wantReason: ReasonMalformedPayload},
		{name: "body a JSON array", req: stripeRequest(stripeHeaderAt(now, `[{"id":"evt_1"}]`, stripeSecret), `[{"id":"evt_1"}]`), keys: []string{stripeSecret}, wantReason: ReasonMalformedPayload},
		{name: "body null", req: stripeRequest(stripeHeaderAt(now, `null`, stripeSecret), `null`), keys: []string{stripeSecret}, wantReason: ReasonMalformedPayload},
		{name: "body with trailing garbage", req: stripeRequest(stripeHeaderAt(now, `{"id":"evt_1"}x`, stripeSecret), `{"id":"evt_1"}x`), keys: []string{stripeSecret}, wantReason: ReasonMalformedPayload},
		{name: "empty body", req: stripeRequest(stripeHeaderAt(now, ``, stripeSecret), ``), keys: []string{stripeSecret}, wantReason: ReasonMalformedPayload},
		{name: "no id", req: stripeRequest(stripeHeaderAt(now, `{"object":"event"}`, stripeSecret), `{"object":"event"}`), keys: []string{stripeSecret}, wantReason: ReasonMissingEventID},
		{name: "empty id", req: stripeRequest(stripeHeaderAt(now, `{"id":""}`, stripeSecret), `{"id":""}`), keys: []string{stripeSecret}, wantReason: ReasonMissingEventID},
		{name: "id not a string", req: stripeRequest(stripeHeaderAt(now, `{"id":42}`, stripeSecret), `{"id":42}`), keys: []string{stripeSecret}, wantReason: ReasonMissingEventID},
		{name: "id key matched exactly", req: stripeRequest(stripeHeaderAt(now, `{"ID":"evt_1"}`, stripeSecret), `{"ID":"evt_1"}`), keys: []string{stripeSecret}, wantReason: ReasonMissingEventID},
		{name: "nested id is not the event id", req: stripeRequest(stripeHeaderAt(now, `{"data":{"id":"cus_1"},"id":"evt_2"}`, stripeSecret), `{"data":{"id":"cus_1"},"id":"evt_2"}`), keys: []string{stripeSecret}, wantKey: "k0", wantEvent: "evt_2"},
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
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

func TestStripeEmptyKeyMaterialNeverMatches(t *testing.T) {
	t.Parallel()
	p := Stripe()
	req := stripeRequest(stripeHeaderAt(fixedNow.Unix(), stripeBody, ""), stripeBody)
	res, err := p.Verify(req, []Key{{ID: "empty", Material: nil}, {ID: "empty2", Material: []byte{}}}, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
}

func TestStripeToleranceDetail(t *testing.T) {
	t.Parallel()
	p := Stripe()
	now := fixedNow.Unix()
	for _, tc := range []struct {
		name   string
		ts     int64
		detail string
	}{
		{"old", now - 412, "timestamp is 412s old, more than the 300s tolerance"},
		{"future", now + 412, "timestamp is 412s in the future, more than the 300s tolerance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := stripeRequest(stripeHeaderAt(tc.ts, stripeBody, stripeSecret), stripeBody)
			_, err := p.Verify(req, keysFor(t, p, stripeSecret), Params{Now: fixedNow, Tolerance: 300 * time.Second})
			if !errors.Is(err, &Rejection{Reason: ReasonTimestampOutOfTolerance, Detail: tc.detail}) {
				t.Fatalf("got %v, want detail %q", err, tc.detail)
			}
		})
	}
}

// TestStripePublishedVector checks the fixed vector in stripe-dotnet's test suite
// (src/StripeTests/Services/Events/EventUtilityTest.cs with Resources/event_test_signature.json):
// secret "webhook_secret", t=1533204620, v1=2220f87e..., plus a v0 that must be ignored.
func TestStripePublishedVector(t *testing.T) {
	t.Parallel()
	const body = `{
  "id": "evt_123",
  "object": "event",
  "account": "acct_123",
  "api_version": "2017-05-25",
  "created": 1533204620,
  "data": {
    "object": {
      "id": "cus_123",
      "object": "customer",
      "created": 123456789,
      "email": "test@stripe.com",
      "livemode": false,
      "metadata": {}
    }
  },
  "livemode": false,
  "pending_webhooks": 1,
  "request": {
    "id": "req_123",
    "idempotency_key": "idempotency-key-123"
  },
  "type": "customer.created"
}
`
	const sig = "t=1533204620,v1=2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7,v0=63f3a72374a733066c4be69ed7f8e5ac85c22c9f0a6a612ab9a025a9e4ee7eef"
	p := Stripe()
	req := stripeRequest(sig, body)
	res, err := p.Verify(req, keysFor(t, p, "webhook_secret"), Params{Now: time.Unix(1533204620+100, 0), Tolerance: 300 * time.Second})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "evt_123" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(body), Timestamp: time.Unix(1533204620, 0)}, []string{"webhook_secret"})
	if err != nil {
		t.Fatal(err)
	}
	if want := sig[:strings.Index(sig, ",v0=")]; h[0].Value != want {
		t.Fatalf("Sign = %q, want %q", h[0].Value, want)
	}
}

// TestStripeOracle cross-checks with stripe-go: its signatures verify here and ours verify
// there. stripe-go reads the real clock, so these deliveries are signed near time.Now().
func TestStripeOracle(t *testing.T) {
	t.Parallel()
	p := Stripe()
	now := time.Now()
	params := Params{Now: now, Tolerance: webhook.DefaultTolerance}

	t.Run("stripe-go signs, we verify", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{stripeBody, `{"id":"evt_2","data":{"object":{"amount":1}}}` + "\n"} {
			sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: stripeSecret, Timestamp: now})
			req := stripeRequest(sp.Header, body)
			res, err := p.Verify(req, keysFor(t, p, stripeSecret), params)
			checkOutcome(t, res, err, 0, "k0", req)
		}
	})
	t.Run("stripe-go rotated header, we verify with either key", func(t *testing.T) {
		t.Parallel()
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(stripeBody), Secret: stripeSecret, Timestamp: now})
		sp2 := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(stripeBody), Secret: stripeSecretNew, Timestamp: now})
		req := stripeRequest(sp.Header+",v1="+hex.EncodeToString(sp2.Signature), stripeBody)
		for _, secret := range []string{stripeSecret, stripeSecretNew} {
			res, err := p.Verify(req, []Key{{ID: "only", Material: []byte(secret)}}, params)
			checkOutcome(t, res, err, 0, "only", req)
		}
	})
	t.Run("we sign, stripe-go verifies", func(t *testing.T) {
		t.Parallel()
		req := signed(t, p, SignInput{Body: []byte(stripeBody), Timestamp: now}, stripeSecret, stripeSecretNew)
		sig := header(req, "Stripe-Signature")
		for _, secret := range []string{stripeSecret, stripeSecretNew} {
			if err := webhook.ValidatePayloadWithTolerance(req.Body, sig, secret, webhook.DefaultTolerance); err != nil {
				t.Fatalf("stripe-go rejects our signature for one secret: %v", err)
			}
		}
		if err := webhook.ValidatePayload(req.Body, sig, "whsec_other"); err == nil {
			t.Fatal("stripe-go accepts our signature under another secret")
		}
		if err := webhook.ValidatePayload(append(append([]byte(nil), req.Body...), ' '), sig, stripeSecret); err == nil {
			t.Fatal("stripe-go accepts a tampered body")
		}
	})
	t.Run("agreement on rejections", func(t *testing.T) {
		t.Parallel()
		ts := now.Unix()
		goodSig := stripeHex(ts, stripeBody, stripeSecret)
		// Headers both verifiers must reject (we are stricter on future timestamps and
		// uppercase hex, so those are not in this list).
		for _, sig := range []string{
			"",
			"garbage",
			"v1,t=1",
			"t=",
			"t=" + strconv.FormatInt(ts, 10) + ",v0=" + goodSig,
			"t=" + strconv.FormatInt(ts, 10) + ",v1=" + strings.Repeat("0", 64),
			"t=" + strconv.FormatInt(ts+1, 10) + ",v1=" + goodSig,
			"t=" + strconv.FormatInt(ts-3600, 10) + ",v1=" + stripeHex(ts-3600, stripeBody, stripeSecret),
			"t=" + strconv.FormatInt(ts, 10) + ",v1=" + goodSig + ",",
		} {
			if webhook.ValidatePayload([]byte(stripeBody), sig, stripeSecret) == nil {
				t.Errorf("stripe-go accepts %q", sig)
			}
			if _, err := p.Verify(stripeRequest(sig, stripeBody), keysFor(t, p, stripeSecret), params); err == nil {
				t.Errorf("we accept %q", sig)
			}
		}
	})
}

func TestStripeParseSecret(t *testing.T) {
	t.Parallel()
	p := Stripe()
	for _, tc := range []struct {
		name    string
		secret  string
		wantErr bool
	}{
		{"whsec kept as bytes", "whsec_abc123", false},
		{"CLI style secret", "whsec_" + strings.Repeat("a", 64), false},
		{"no prefix is still a key", "plain", false},
		{"empty", "", true},
		{"surrounding whitespace", " whsec_abc123\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key, err := p.ParseSecret(tc.secret)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSecret) {
					t.Fatalf("err = %v, want ErrInvalidSecret", err)
				}
				if tc.secret != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.secret)) {
					t.Fatalf("error %q echoes the secret", err)
				}
				return
			}
			if err != nil || string(key) != tc.secret {
				t.Fatalf("ParseSecret = %q, %v", key, err)
			}
		})
	}
}

func TestStripeSign(t *testing.T) {
	t.Parallel()
	p := Stripe()
	at := time.Unix(1_700_000_000, 0)
	t.Run("one v1 per secret in one header", func(t *testing.T) {
		t.Parallel()
		h, err := p.Sign(SignInput{Body: []byte(stripeBody), Timestamp: at}, []string{stripeSecret, stripeSecretNew})
		if err != nil {
			t.Fatal(err)
		}
		want := stripeHeaderAt(at.Unix(), stripeBody, stripeSecret, stripeSecretNew)
		if len(h) != 1 || h[0].Name != "Stripe-Signature" || h[0].Value != want {
			t.Fatalf("Sign = %+v, want Stripe-Signature: %s", h, want)
		}
	})
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte(stripeBody), Timestamp: at}, nil},
		{"no timestamp", SignInput{Body: []byte(stripeBody)}, []string{stripeSecret}},
		{"timestamp before 1970", SignInput{Body: []byte(stripeBody), Timestamp: time.Unix(-5, 0)}, []string{stripeSecret}},
		{"invalid secret", SignInput{Body: []byte(stripeBody), Timestamp: at}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}
