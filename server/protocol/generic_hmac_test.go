package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	ghSecret    = "generic-secret-one"
	ghSecretNew = "generic-secret-two"
	ghBody      = `{"event":{"id":"ev_42","n":7},"type":"thing.created"}`
)

// ghMAC is an independent HMAC computation for the expectations.
func ghMAC(newHash func() hash.Hash, key, msg string) []byte {
	m := hmac.New(newHash, []byte(key))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func ghHex256(key, msg string) string { return hex.EncodeToString(ghMAC(sha256.New, key, msg)) }

func ghReq(body string, h ...string) *Request {
	r := &Request{Method: "POST", URL: "https://hooks.example.com/in?x=1", Body: []byte(body)}
	for i := 0; i+1 < len(h); i += 2 {
		r.Headers = append(r.Headers, Header{Name: h[i], Value: h[i+1]})
	}
	return r
}

func TestGenericHMACVerify(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	now := fixedNow.Unix()
	ts := strconv.FormatInt(now, 10)
	good := ghHex256(ghSecret, ghBody)
	goodNew := ghHex256(ghSecretNew, ghBody)
	tsOpts := map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Timestamp"}
	tsSig := func(ts int64, body, secret string) string {
		return ghHex256(secret, strconv.FormatInt(ts, 10)+"."+body)
	}
	tsReq := func(ts int64, sig, body string) *Request {
		return ghReq(body, "X-Signature", sig, "X-Timestamp", strconv.FormatInt(ts, 10))
	}
	msOpts := map[string]string{"template": "{timestamp}:{body}", "timestamp_header": "X-Ts", "timestamp_unit": "ms"}
	msAt := func(d time.Duration) (string, string) {
		v := strconv.FormatInt(fixedNow.Add(d).UnixMilli(), 10)
		return v, ghHex256(ghSecret, v+":"+ghBody)
	}
	rfcOpts := map[string]string{"template": "{timestamp}{body}", "timestamp_header": "X-Ts", "timestamp_unit": "rfc3339"}
	rfcAt := func(d time.Duration) (string, string) {
		v := fixedNow.Add(d).UTC().Format(time.RFC3339Nano)
		return v, ghHex256(ghSecret, v+ghBody)
	}
	comma := map[string]string{"list": "comma", "prefix": "sha256="}
	space := map[string]string{"list": "space", "prefix": "v1,", "encoding": "base64"}
	b64 := func(secret, msg string) string {
		return base64.StdEncoding.EncodeToString(ghMAC(sha256.New, secret, msg))
	}
	kv := map[string]string{"list": "kv", "scheme": "v1", "timestamp_key": "t", "template": "{timestamp}.{body}"}
	idHeader := map[string]string{"id_header": "X-Event-Id"}
	idPtr := map[string]string{"id_pointer": "/event/id"}
	idNum := map[string]string{"id_pointer": "/event/n"}
	withURL := map[string]string{"template": "{method} {url}\n{header:X-Tenant}\n{body}"}
	urlSig := ghHex256(ghSecret, "POST https://hooks.example.com/in?x=1\nacme\n"+ghBody)
	ms0, msSig0 := msAt(0)
	msOld, msSigOld := msAt(-301 * time.Second)
	msEdge, msSigEdge := msAt(-300 * time.Second)
	rfc0, rfcSig0 := rfcAt(1500 * time.Millisecond)
	rfcNew, rfcSigNew := rfcAt(301 * time.Second)
	// An RFC 3339 timestamp with a zone offset, signed as sent, not as its UTC rewrite.
	rfcZoned := fixedNow.In(time.FixedZone("", 3600)).Format(time.RFC3339)
	rfcSigZoned := ghHex256(ghSecret, rfcZoned+ghBody)

	tests := []struct {
		name       string
		opts       map[string]string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string // empty: the body hash of req
	}{
		{name: "accepted", req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "body tampered by one trailing space", req: ghReq(ghBody+" ", "X-Signature", good), keys: []string{ghSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: ghReq(ghBody, "X-Signature", good), keys: []string{"someone-else"}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: ghReq(ghBody, "X-Signature", good), wantReason: ReasonSignatureMismatch},
		{name: "missing header", req: ghReq(ghBody), keys: []string{ghSecret}, wantReason: ReasonMissingSignature},
		{name: "header name case-insensitive", req: ghReq(ghBody, "x-signature", good), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "malformed header: empty", req: ghReq(ghBody, "X-Signature", ""), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: uppercase hex", req: ghReq(ghBody, "X-Signature", strings.ToUpper(good)), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: short", req: ghReq(ghBody, "X-Signature", good[:62]), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: prefixed when none is configured", req: ghReq(ghBody, "X-Signature", "sha256="+good), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "rotation: old key matches", req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret, ghSecretNew}, wantKey: "k0"},
		{name: "rotation: new key matches", req: ghReq(ghBody, "X-Signature", goodNew), keys: []string{ghSecret, ghSecretNew}, wantKey: "k1"},

		{name: "timestamp: accepted", opts: tsOpts, req: tsReq(now, tsSig(now, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp: stale", opts: tsOpts, req: tsReq(now-301, tsSig(now-301, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "timestamp: future", opts: tsOpts, req: tsReq(now+301, tsSig(now+301, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "timestamp: future boundary accepted", opts: tsOpts, req: tsReq(now+300, tsSig(now+300, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp: boundary accepted", opts: tsOpts, req: tsReq(now-300, tsSig(now-300, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp: tampered", opts: tsOpts, req: tsReq(now+1, tsSig(now, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp: missing", opts: tsOpts, req: ghReq(ghBody, "X-Signature", tsSig(now, ghBody, ghSecret)), keys: []string{ghSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp: not digits", opts: tsOpts, req: ghReq(ghBody, "X-Signature", tsSig(now, ghBody, ghSecret), "X-Timestamp", "12a"), keys: []string{ghSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp: bad signature beats stale", opts: tsOpts, req: tsReq(now-3600, tsSig(now-3600, ghBody, "forger"), ghBody), keys: []string{ghSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp: option tolerance overrides the endpoint's", opts: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Timestamp", "tolerance": "1h"}, req: tsReq(now-3000, tsSig(now-3000, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp: endpoint tolerance applies", opts: tsOpts, req: tsReq(now-20, tsSig(now-20, ghBody, ghSecret), ghBody), keys: []string{ghSecret}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "timestamp ms: accepted", opts: msOpts, req: ghReq(ghBody, "X-Signature", msSig0, "X-Ts", ms0), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp ms: boundary accepted", opts: msOpts, req: ghReq(ghBody, "X-Signature", msSigEdge, "X-Ts", msEdge), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp ms: stale", opts: msOpts, req: ghReq(ghBody, "X-Signature", msSigOld, "X-Ts", msOld), keys: []string{ghSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "timestamp rfc3339: accepted", opts: rfcOpts, req: ghReq(ghBody, "X-Signature", rfcSig0, "X-Ts", rfc0), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp rfc3339: zone offset signed as sent", opts: rfcOpts, req: ghReq(ghBody, "X-Signature", rfcSigZoned, "X-Ts", rfcZoned), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "timestamp rfc3339: future", opts: rfcOpts, req: ghReq(ghBody, "X-Signature", rfcSigNew, "X-Ts", rfcNew), keys: []string{ghSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "timestamp rfc3339: not a time", opts: rfcOpts, req: ghReq(ghBody, "X-Signature", rfcSig0, "X-Ts", "yesterday"), keys: []string{ghSecret}, wantReason: ReasonMissingTimestamp},

		{name: "comma: several signatures, second matches", opts: comma, req: ghReq(ghBody, "X-Signature", "sha256="+strings.Repeat("ab", 32)+", sha256="+good), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "comma: rotation, new key", opts: comma, req: ghReq(ghBody, "X-Signature", "sha256="+good+",sha256="+goodNew), keys: []string{"retired", ghSecretNew}, wantKey: "k1"},
		{name: "comma: unknown version ignored", opts: comma, req: ghReq(ghBody, "X-Signature", "sha512=zz,sha256="+good), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "comma: only unknown versions", opts: comma, req: ghReq(ghBody, "X-Signature", "sha1="+good), keys: []string{ghSecret}, wantReason: ReasonMissingSignature},
		{name: "comma: malformed beside a wrong one", opts: comma, req: ghReq(ghBody, "X-Signature", "sha256=xyz,sha256="+strings.Repeat("ab", 32)), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "comma: none matches", opts: comma, req: ghReq(ghBody, "X-Signature", "sha256="+strings.Repeat("ab", 32)), keys: []string{ghSecret}, wantReason: ReasonSignatureMismatch},
		{name: "space: v1a ignored, v1 matches", opts: space, req: ghReq(ghBody, "X-Signature", "v1a,abc  v1,"+b64(ghSecret, ghBody)), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "space: unpadded base64 is malformed", opts: space, req: ghReq(ghBody, "X-Signature", "v1,"+strings.TrimRight(b64(ghSecret, ghBody), "=")), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "kv: accepted", opts: kv, req: ghReq(ghBody, "X-Signature", "t="+ts+",v1="+strings.Repeat("00", 32)+",v1="+tsSig(now, ghBody, ghSecret)+",v0=x"), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "kv: no t", opts: kv, req: ghReq(ghBody, "X-Signature", "v1="+tsSig(now, ghBody, ghSecret)), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "kv: t not digits", opts: kv, req: ghReq(ghBody, "X-Signature", "t=1e9,v1="+tsSig(now, ghBody, ghSecret)), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "kv: t repeated", opts: kv, req: ghReq(ghBody, "X-Signature", "t="+ts+",t="+ts+",v1="+tsSig(now, ghBody, ghSecret)), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
		{name: "kv: only v0", opts: kv, req: ghReq(ghBody, "X-Signature", "t="+ts+",v0="+tsSig(now, ghBody, ghSecret)), keys: []string{ghSecret}, wantReason: ReasonMissingSignature},
		{name: "kv: stale", opts: kv, req: ghReq(ghBody, "X-Signature", "t="+strconv.FormatInt(now-400, 10)+",v1="+tsSig(now-400, ghBody, ghSecret)), keys: []string{ghSecret}, wantReason: ReasonTimestampOutOfTolerance},

		{name: "identity: header", opts: idHeader, req: ghReq(ghBody, "X-Signature", good, "X-Event-Id", "ev_h1"), keys: []string{ghSecret}, wantKey: "k0", wantEvent: "ev_h1"},
		{name: "identity: header missing", opts: idHeader, req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: pointer to a string", opts: idPtr, req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantKey: "k0", wantEvent: "ev_42"},
		{name: "identity: pointer to a number", opts: idNum, req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantKey: "k0", wantEvent: "7"},
		{name: "identity: pointer finds nothing", opts: map[string]string{"id_pointer": "/event/nope"}, req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: pointer to an object", opts: map[string]string{"id_pointer": "/event"}, req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: body not JSON", opts: idPtr, req: ghReq("a=b", "X-Signature", ghHex256(ghSecret, "a=b")), keys: []string{ghSecret}, wantReason: ReasonMalformedPayload},
		{name: "identity: signed id header", opts: map[string]string{"id_header": "webhook-id", "template": "{id}.{body}"}, req: ghReq(ghBody, "X-Signature", ghHex256(ghSecret, "ev_9."+ghBody), "webhook-id", "ev_9"), keys: []string{ghSecret}, wantKey: "k0", wantEvent: "ev_9"},
		{name: "identity: signed id header tampered", opts: map[string]string{"id_header": "webhook-id", "template": "{id}.{body}"}, req: ghReq(ghBody, "X-Signature", ghHex256(ghSecret, "ev_9."+ghBody), "webhook-id", "ev_8"), keys: []string{ghSecret}, wantReason: ReasonSignatureMismatch},

		{name: "url, method and header signed", opts: withURL, req: ghReq(ghBody, "X-Signature", urlSig, "X-Tenant", "acme"), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "url signed, other URL", opts: withURL, req: &Request{Method: "POST", URL: "https://hooks.example.com/in?x=2", Headers: Headers{{"X-Signature", urlSig}, {"X-Tenant", "acme"}}, Body: []byte(ghBody)}, keys: []string{ghSecret}, wantReason: ReasonSignatureMismatch},
		{name: "url signed, no URL forwarded", opts: withURL, req: &Request{Method: "POST", Headers: Headers{{"X-Signature", urlSig}, {"X-Tenant", "acme"}}, Body: []byte(ghBody)}, keys: []string{ghSecret}, wantReason: ReasonMissingSignature},
		{name: "signed header absent", opts: withURL, req: ghReq(ghBody, "X-Signature", urlSig), keys: []string{ghSecret}, wantReason: ReasonMissingSignature},

		{name: "key hex", opts: map[string]string{"key": "hex"}, req: ghReq(ghBody, "X-Signature", ghHex256("\x01\x02\xff", ghBody)), keys: []string{"0102ff"}, wantKey: "k0"},
		{name: "key base64", opts: map[string]string{"key": "base64"}, req: ghReq(ghBody, "X-Signature", ghHex256("\x01\x02\xff", ghBody)), keys: []string{"AQL/"}, wantKey: "k0"},
		{name: "key whsec", opts: map[string]string{"key": "whsec"}, req: ghReq(ghBody, "X-Signature", ghHex256("\x01\x02\xff", ghBody)), keys: []string{"whsec_AQL/"}, wantKey: "k0"},
		{name: "key undecodable never matches", opts: map[string]string{"key": "hex"}, req: ghReq(ghBody, "X-Signature", ghHex256("zz", ghBody)), keys: []string{"zz"}, wantReason: ReasonSignatureMismatch},
		{name: "key undecodable skipped, next key matches", opts: map[string]string{"key": "hex"}, req: ghReq(ghBody, "X-Signature", ghHex256("\x01", ghBody)), keys: []string{"zz", "01"}, wantKey: "k1"},
		{name: "sha1 base64url", opts: map[string]string{"algorithm": "sha1", "encoding": "base64url"}, req: ghReq(ghBody, "X-Signature", base64.RawURLEncoding.EncodeToString(ghMAC(sha1.New, ghSecret, ghBody))), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "sha512 hex", opts: map[string]string{"algorithm": "sha512"}, req: ghReq(ghBody, "X-Signature", hex.EncodeToString(ghMAC(sha512.New, ghSecret, ghBody))), keys: []string{ghSecret}, wantKey: "k0"},
		{name: "sha512 header with a sha256 signature", opts: map[string]string{"algorithm": "sha512"}, req: ghReq(ghBody, "X-Signature", good), keys: []string{ghSecret}, wantReason: ReasonMalformedSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: 300 * time.Second}
			}
			params.Options = tc.opts
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			want := tc.wantEvent
			if want == "" {
				want = bodySHA256ID(tc.req.Body)
			}
			if tc.wantReason == 0 && res.EventID != want {
				t.Fatalf("EventID = %q, want %q", res.EventID, want)
			}
		})
	}
}

func TestGenericHMACBodyHashIdentity(t *testing.T) {
	t.Parallel()
	// sha256("") is the FIPS 180-2 empty-message digest.
	if got := bodySHA256ID(nil); got != "body-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("bodySHA256ID(empty) = %s", got)
	}
	// sha256("abc") is the FIPS 180-2 example.
	if got := bodySHA256ID([]byte("abc")); got != "body-sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("bodySHA256ID(abc) = %s", got)
	}
}

// TestGenericHMACPublishedVectors configures generic-hmac as three providers and checks each
// provider's published vector, in both directions (verify theirs, sign to the same header).
func TestGenericHMACPublishedVectors(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	for _, tc := range []struct {
		name    string
		opts    map[string]string
		secret  string
		body    string
		headers Headers
		now     time.Time
		event   string
		sign    SignInput
	}{
		{
			// GitHub docs, "Validating webhook deliveries" (github/docs
			// content/webhooks/using-webhooks/validating-webhook-deliveries.md).
			name:    "GitHub docs example",
			opts:    map[string]string{"header": "X-Hub-Signature-256", "prefix": "sha256=", "id_header": "X-GitHub-Delivery"},
			secret:  "It's a Secret to Everybody",
			body:    "Hello, World!",
			headers: Headers{{"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, {"X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}},
			event:   "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			sign:    SignInput{EventID: "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
		},
		{
			// Standard Webhooks libraries, libraries/go/webhook_test.go TestWebhookSign.
			name:    "Standard Webhooks library vector",
			opts:    map[string]string{"header": "webhook-signature", "list": "space", "prefix": "v1,", "encoding": "base64", "key": "whsec", "template": "{id}.{timestamp}.{body}", "id_header": "webhook-id", "timestamp_header": "webhook-timestamp"},
			secret:  swSecret,
			body:    swBody,
			headers: Headers{{"webhook-timestamp", "1614265330"}, {"webhook-id", swID}, {"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}},
			now:     time.Unix(1614265330+60, 0),
			event:   swID,
			sign:    SignInput{EventID: swID, Timestamp: time.Unix(1614265330, 0)},
		},
		{
			// stripe-dotnet src/StripeTests/Services/Events/EventUtilityTest.cs with
			// Resources/event_test_signature.json; the body is the compact form checked in
			// stripe_test.go, so only the header shape is reused here: signed afresh below.
			name:    "Stripe header shape",
			opts:    map[string]string{"header": "Stripe-Signature", "list": "kv", "scheme": "v1", "timestamp_key": "t", "template": "{timestamp}.{body}", "id_pointer": "/id"},
			secret:  "webhook_secret",
			body:    stripeBody,
			headers: Headers{{"Stripe-Signature", "t=1533204620,v1=" + ghHex256("webhook_secret", "1533204620."+stripeBody) + ",v0=63f3a72374a733066c4be69ed7f8e5ac85c22c9f0a6a612ab9a025a9e4ee7eef"}},
			now:     time.Unix(1533204620+100, 0),
			event:   "evt_test_webhook",
			sign:    SignInput{Timestamp: time.Unix(1533204620, 0)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := p.ValidateOptions(tc.opts); err != nil {
				t.Fatal(err)
			}
			req := &Request{Method: "POST", Headers: tc.headers, Body: []byte(tc.body)}
			res, err := p.Verify(req, keysFor(t, p, tc.secret), Params{Now: tc.now, Tolerance: 5 * time.Minute, Options: tc.opts})
			checkOutcome(t, res, err, 0, "k0", req)
			if res.EventID != tc.event {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.event)
			}
			in := tc.sign
			in.Body, in.Options = []byte(tc.body), tc.opts
			h, err := p.Sign(in, []string{tc.secret})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range h {
				got, _ := tc.headers.Get(want.Name)
				if i := strings.Index(got, ",v0="); i > 0 {
					got = got[:i]
				}
				if got != want.Value {
					t.Fatalf("Sign %s = %q, want %q", want.Name, want.Value, got)
				}
			}
		})
	}
}

// TestGenericHMACMatchesBuiltins signs with generic-hmac configured as Stripe and as Standard
// Webhooks, with two secrets, and verifies with the built-in protocols.
func TestGenericHMACMatchesBuiltins(t *testing.T) {
	t.Parallel()
	g := GenericHMAC()
	for _, tc := range []struct {
		name    string
		builtin *Protocol
		opts    map[string]string
		secrets []string
	}{
		{"stripe", Stripe(), map[string]string{"header": "Stripe-Signature", "list": "kv", "scheme": "v1", "timestamp_key": "t", "template": "{timestamp}.{body}"}, []string{stripeSecret, stripeSecretNew}},
		{"standard-webhooks", StandardWebhooks(), map[string]string{"header": "webhook-signature", "list": "space", "prefix": "v1,", "encoding": "base64", "key": "whsec", "template": "{id}.{timestamp}.{body}", "id_header": "webhook-id", "timestamp_header": "webhook-timestamp"}, []string{swSecret, swSecretNew}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := SignInput{Body: []byte(stripeBody), EventID: "evt_test_webhook", Timestamp: fixedNow, Options: tc.opts}
			req := signed(t, g, in, tc.secrets...)
			for i, s := range tc.secrets {
				res, err := tc.builtin.Verify(req, keysFor(t, tc.builtin, s), Params{Now: fixedNow})
				checkOutcome(t, res, err, 0, "k0", req)
				res, err = g.Verify(req, []Key{{ID: "only", Material: []byte(s)}}, Params{Now: fixedNow, Options: tc.opts})
				if err != nil || res.KeyID != "only" {
					t.Fatalf("secret %d: generic-hmac rejects its own rotation header: %v", i, err)
				}
			}
			want, err := tc.builtin.Sign(in, tc.secrets)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range want {
				if got := header(req, h.Name); got != h.Value {
					t.Fatalf("%s = %q, built-in signs %q", h.Name, got, h.Value)
				}
			}
		})
	}
}

func TestGenericHMACValidateOptions(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	for _, tc := range []struct {
		name    string
		opts    map[string]string
		wantErr string // a fragment naming the option; empty: valid
	}{
		{name: "nil", opts: nil},
		{name: "public_url passes through", opts: map[string]string{"public_url": "https://x.example/"}},
		{name: "everything", opts: map[string]string{"header": "X-Sig", "prefix": "sha512=", "list": "comma", "algorithm": "sha512", "encoding": "base64url", "key": "hex", "template": "{method}|{url}|{timestamp}|{id}|{header:X-A}|{body}", "timestamp_header": "X-T", "timestamp_unit": "ms", "tolerance": "10m", "id_header": "X-Id"}},
		{name: "unknown option", opts: map[string]string{"algo": "sha256"}, wantErr: `unknown option "algo"`},
		{name: "bad header", opts: map[string]string{"header": "X Sig"}, wantErr: "option header"},
		{name: "bad list", opts: map[string]string{"list": "semicolon"}, wantErr: "option list"},
		{name: "bad algorithm", opts: map[string]string{"algorithm": "md5"}, wantErr: "option algorithm"},
		{name: "bad encoding", opts: map[string]string{"encoding": "base32"}, wantErr: "option encoding"},
		{name: "bad key", opts: map[string]string{"key": "pem"}, wantErr: "option key"},
		{name: "empty prefix", opts: map[string]string{"prefix": ""}, wantErr: "option prefix"},
		{name: "prefix with kv", opts: map[string]string{"list": "kv", "scheme": "v1", "prefix": "x"}, wantErr: "option prefix"},
		{name: "prefix containing the comma separator", opts: map[string]string{"list": "comma", "prefix": "v1,"}, wantErr: "option prefix"},
		{name: "prefix containing the space separator", opts: map[string]string{"list": "space", "prefix": "v1 "}, wantErr: "option prefix"},
		{name: "kv without scheme", opts: map[string]string{"list": "kv"}, wantErr: "option scheme"},
		{name: "scheme without kv", opts: map[string]string{"scheme": "v1"}, wantErr: "option scheme"},
		{name: "scheme with =", opts: map[string]string{"list": "kv", "scheme": "v=1"}, wantErr: "option scheme"},
		{name: "template without body", opts: map[string]string{"template": "{timestamp}", "timestamp_header": "X-T"}, wantErr: "option template"},
		{name: "template with two bodies", opts: map[string]string{"template": "{body}{body}"}, wantErr: "option template"},
		{name: "template with unknown placeholder", opts: map[string]string{"template": "{nonce}.{body}"}, wantErr: "option template"},
		{name: "template unclosed", opts: map[string]string{"template": "{body}.{timestamp"}, wantErr: "option template"},
		{name: "template lone close", opts: map[string]string{"template": "{body}}"}, wantErr: "option template"},
		{name: "timestamp in template, no source", opts: map[string]string{"template": "{timestamp}.{body}"}, wantErr: "timestamp_header"},
		{name: "timestamp source without timestamp in template", opts: map[string]string{"timestamp_header": "X-T"}, wantErr: "option timestamp_header"},
		{name: "both timestamp sources", opts: map[string]string{"list": "kv", "scheme": "v1", "template": "{timestamp}.{body}", "timestamp_header": "X-T", "timestamp_key": "t"}, wantErr: "timestamp_key"},
		{name: "timestamp_key without kv", opts: map[string]string{"template": "{timestamp}.{body}", "timestamp_key": "t"}, wantErr: "option timestamp_key"},
		{name: "timestamp_key equal to scheme", opts: map[string]string{"list": "kv", "scheme": "v1", "template": "{timestamp}.{body}", "timestamp_key": "v1"}, wantErr: "option timestamp_key"},
		{name: "bad unit", opts: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-T", "timestamp_unit": "us"}, wantErr: "option timestamp_unit"},
		{name: "unit without timestamp", opts: map[string]string{"timestamp_unit": "ms"}, wantErr: "option timestamp_unit"},
		{name: "bad tolerance", opts: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-T", "tolerance": "5 minutes"}, wantErr: "option tolerance"},
		{name: "negative tolerance", opts: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-T", "tolerance": "-5m"}, wantErr: "option tolerance"},
		{name: "tolerance without timestamp", opts: map[string]string{"tolerance": "5m"}, wantErr: "option tolerance"},
		{name: "both identity options", opts: map[string]string{"id_header": "X-Id", "id_pointer": "/id"}, wantErr: "id_pointer"},
		{name: "bad pointer", opts: map[string]string{"id_pointer": "id"}, wantErr: "option id_pointer"},
		{name: "bad pointer escape", opts: map[string]string{"id_pointer": "/a~2"}, wantErr: "option id_pointer"},
		{name: "bad id header", opts: map[string]string{"id_header": "X:Id"}, wantErr: "option id_header"},
		{name: "id in template without id_header", opts: map[string]string{"template": "{id}.{body}", "id_pointer": "/id"}, wantErr: "id_header"},
		{name: "bad header placeholder", opts: map[string]string{"template": "{header:}{body}"}, wantErr: "option template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := p.ValidateOptions(tc.opts)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatal("accepted")
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not name %q", err, tc.wantErr)
			}
			if tc.wantErr != "" {
				// Verify refuses the same options with a plain (non-rejection) error.
				_, verr := p.Verify(ghReq(ghBody, "X-Signature", "x"), nil, Params{Now: fixedNow, Options: tc.opts})
				if verr == nil || ReasonOf(verr) != 0 {
					t.Fatalf("Verify with invalid options = %v, want a plain error", verr)
				}
			}
		})
	}
}

func TestGenericHMACTemplate(t *testing.T) {
	t.Parallel()
	parts, err := parseGenericTemplate("{{{timestamp}}}.{header:X-A}{body}")
	if err != nil {
		t.Fatal(err)
	}
	want := []genericPart{{genericLiteral, "{"}, {genericTimestamp, ""}, {genericLiteral, "}."}, {genericHeader, "X-A"}, {genericBody, ""}}
	if !reflect.DeepEqual(parts, want) {
		t.Fatalf("parts = %+v", parts)
	}
	if got := renderGenericTemplate(parts); got != "{{{timestamp}}}.{header:X-A}{body}" {
		t.Fatalf("render = %q", got)
	}
}

// TestGenericPointerRFC6901 is the example of RFC 6901 section 5 (every pointer of the
// document and the value it names), plus the errors of section 7.
func TestGenericPointerRFC6901(t *testing.T) {
	t.Parallel()
	const doc = `{
      "foo": ["bar", "baz"],
      "": 0,
      "a/b": 1,
      "c%d": 2,
      "e^f": 3,
      "g|h": 4,
      "i\\j": 5,
      "k\"l": 6,
      " ": 7,
      "m~n": 8
   }`
	for ptr, want := range map[string]string{
		"/foo/0": "bar", "/foo/1": "baz", "/": "0", "/a~1b": "1", "/c%d": "2", "/e^f": "3", "/g|h": "4",
		`/i\j`: "5", `/k"l`: "6", "/ ": "7", "/m~0n": "8",
	} {
		got, err := genericPointerID([]byte(doc), ptr)
		if err != nil || got != want {
			t.Errorf("pointer %q = %q, %v; want %q", ptr, got, err, want)
		}
	}
	for ptr, reason := range map[string]Reason{
		"":         ReasonMissingEventID, // the whole document, an object
		"/foo":     ReasonMissingEventID, // an array
		"/foo/2":   ReasonMissingEventID,
		"/foo/-":   ReasonMissingEventID,
		"/foo/01":  ReasonMissingEventID,
		"/foo/0/x": ReasonMissingEventID,
		"/nope":    ReasonMissingEventID,
		"/m~n":     ReasonMalformedPayload, // invalid escape
	} {
		_, err := genericPointerID([]byte(doc), ptr)
		if ReasonOf(err) != reason {
			t.Errorf("pointer %q: %v, want %v", ptr, err, reason)
		}
	}
	for _, body := range []string{"", "{", `{"id":"a"} {"id":"b"}`, "nul"} {
		if _, err := genericPointerID([]byte(body), "/id"); ReasonOf(err) != ReasonMalformedPayload {
			t.Errorf("body %q: %v, want malformed payload", body, err)
		}
	}
}

func TestGenericHMACSign(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	t.Run("none list signs with the first secret only", func(t *testing.T) {
		t.Parallel()
		h, err := p.Sign(SignInput{Body: []byte(ghBody)}, []string{ghSecret, ghSecretNew})
		if err != nil {
			t.Fatal(err)
		}
		if got := header(&Request{Headers: h}, "X-Signature"); got != ghHex256(ghSecret, ghBody) {
			t.Fatalf("X-Signature = %q", got)
		}
	})
	t.Run("comma list signs with each secret", func(t *testing.T) {
		t.Parallel()
		h, err := p.Sign(SignInput{Body: []byte(ghBody), Options: map[string]string{"list": "comma", "prefix": "sha256="}}, []string{ghSecret, ghSecretNew})
		if err != nil {
			t.Fatal(err)
		}
		want := "sha256=" + ghHex256(ghSecret, ghBody) + ",sha256=" + ghHex256(ghSecretNew, ghBody)
		if got := header(&Request{Headers: h}, "X-Signature"); got != want {
			t.Fatalf("X-Signature = %q, want %q", got, want)
		}
	})
	for _, tc := range []struct {
		name string
		in   SignInput
	}{
		{"no secret", SignInput{Body: []byte(ghBody)}},
		{"invalid options", SignInput{Body: []byte(ghBody), Options: map[string]string{"list": "x"}}},
		{"unknown signed header", SignInput{Body: []byte(ghBody), Options: map[string]string{"template": "{header:X-A}{body}"}}},
		{"url signed, none given", SignInput{Body: []byte(ghBody), Options: map[string]string{"template": "{url}{body}"}}},
		{"no timestamp", SignInput{Body: []byte(ghBody), Options: map[string]string{"template": "{timestamp}{body}", "timestamp_header": "X-T"}}},
		{"no event id", SignInput{Body: []byte(ghBody), Options: map[string]string{"id_header": "X-Id"}}},
		{"undecodable secret", SignInput{Body: []byte(ghBody), Options: map[string]string{"key": "hex"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			secrets := []string{ghSecret}
			if tc.name == "no secret" {
				secrets = nil
			}
			if _, err := p.Sign(tc.in, secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}

func TestGenericHMACParseSecret(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	for _, s := range []string{"", " padded", "padded\n"} {
		if _, err := p.ParseSecret(s); !errors.Is(err, ErrInvalidSecret) || (s != "" && strings.Contains(err.Error(), s)) {
			t.Errorf("ParseSecret(%q) = %v", s, err)
		}
	}
	if k, err := p.ParseSecret("abc"); err != nil || string(k) != "abc" {
		t.Fatalf("ParseSecret(abc) = %q, %v", k, err)
	}
}

func TestGenericHMACToleranceDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d      time.Duration
		detail string
	}{
		{-412*time.Second - 300*time.Millisecond, "timestamp is 413s old, more than the 300s tolerance"},
		{412 * time.Second, "timestamp is 412s in the future, more than the 300s tolerance"},
	} {
		err := checkGenericTime(fixedNow.Add(tc.d), fixedNow, 300*time.Second)
		if !errors.Is(err, &Rejection{Reason: ReasonTimestampOutOfTolerance, Detail: tc.detail}) {
			t.Errorf("%v: got %v, want %q", tc.d, err, tc.detail)
		}
	}
}

// genericFuzzOptions are the option sets the header fuzz target exercises.
var genericFuzzOptions = []map[string]string{
	nil,
	{"list": "comma", "prefix": "sha256=", "template": "{timestamp}.{body}", "timestamp_header": "X-Timestamp"},
	{"list": "space", "prefix": "v1,", "encoding": "base64", "key": "whsec", "template": "{id}.{timestamp}.{body}", "id_header": "X-Id", "timestamp_header": "X-Timestamp", "timestamp_unit": "rfc3339"},
	{"list": "kv", "scheme": "v1", "timestamp_key": "t", "template": "{timestamp}.{body}", "encoding": "base64url", "algorithm": "sha512"},
	{"algorithm": "sha1", "encoding": "base64", "template": "{method}{url}{body}", "id_pointer": "/id"},
}

func FuzzGenericHMACSignatureHeader(f *testing.F) {
	p := GenericHMAC()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	keys := keysFor(f, p, secret)
	f.Add("0123", "1700000000", []byte(ghBody), uint8(0), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte, which uint8, pos uint16, repl byte) {
		opts := genericFuzzOptions[int(which)%len(genericFuzzOptions)]
		params := Params{Now: fixedNow, Tolerance: 300 * time.Second, Options: opts}
		req := &Request{Method: "POST", URL: "https://h.example/x", Headers: Headers{{"X-Signature", sig}, {"X-Timestamp", ts}, {"X-Id", "ev_1"}}, Body: body}
		_, err := p.Verify(req, keys, params)
		checkAnswer(t, err)

		in := SignInput{Body: body, EventID: "ev_1", Timestamp: fixedNow, Method: "POST", URL: "https://h.example/x", Options: opts}
		sreq := signed(t, p, in, secret)
		sreq.URL = in.URL
		checkMutation(t, p, keys, params, sreq, "X-Signature", pos, repl)
	})
}

func FuzzGenericHMACTemplate(f *testing.F) {
	for _, s := range []string{"{body}", "{timestamp}.{body}", "{{x}}{body}", "{header:X-A}{body}{", "}{body}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		parts, err := parseGenericTemplate(tmpl)
		if err != nil {
			return
		}
		again, err := parseGenericTemplate(renderGenericTemplate(parts))
		if err != nil {
			t.Fatalf("the rendering of a valid template does not parse: %v", err)
		}
		if !reflect.DeepEqual(normalizeGenericParts(parts), normalizeGenericParts(again)) {
			t.Fatalf("round trip changed the template: %+v vs %+v", parts, again)
		}
	})
}

// normalizeGenericParts merges adjacent literals, which the renderer may join.
func normalizeGenericParts(parts []genericPart) []genericPart {
	var out []genericPart
	for _, p := range parts {
		if p.kind == genericLiteral && len(out) > 0 && out[len(out)-1].kind == genericLiteral {
			out[len(out)-1].text += p.text
			continue
		}
		out = append(out, p)
	}
	return out
}
