package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// The secret, id and body of the Standard Webhooks libraries' test suites.
	swSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swSecretNew = "whsec_bmV3ZXIgc2VjcmV0IGZvciByb3RhdGlvbiB0ZXN0cw=="
	swID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swBody      = `{"test": 2432232314}`
	// A v1 entry that is well-formed and matches nothing (from the libraries' tests).
	swWrongEntry = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

// swEntry returns "v1,<base64>" for id, ts and body under secret, computed independently.
func swEntry(t testing.TB, secret, id string, ts int64, body string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func swRequest(id, ts, sig, body string) *Request {
	req := &Request{Method: "POST", Body: []byte(body)}
	for _, h := range []Header{{"webhook-id", id}, {"webhook-timestamp", ts}, {"webhook-signature", sig}} {
		if h.Value != absent {
			req.Headers = append(req.Headers, h)
		}
	}
	return req
}

// absent marks a header swRequest leaves out.
const absent = "\x00"

func TestStandardWebhooksVerify(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	now := fixedNow.Unix()
	ts := strconv.FormatInt(now, 10)
	good := swEntry(t, swSecret, swID, now, swBody)
	goodNew := swEntry(t, swSecretNew, swID, now, swBody)
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
	}{
		{name: "accepted", req: swRequest(swID, ts, good, swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "body tampered by one trailing space", req: swRequest(swID, ts, good, swBody+" "), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		{name: "id tampered", req: swRequest(swID+"x", ts, good, swBody), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: swRequest(swID, strconv.FormatInt(now+1, 10), good, swBody), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: swRequest(swID, ts, good, swBody), keys: []string{swSecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: swRequest(swID, ts, good, swBody), wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key matches", req: swRequest(swID, ts, good+" "+goodNew, swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "rotation: new key matches", req: swRequest(swID, ts, good+" "+goodNew, swBody), keys: []string{"whsec_cmV0aXJlZCBzZWNyZXQgYnl0ZXM=", swSecretNew}, wantKey: "k1"},
		{name: "rotation: first key in order wins", req: swRequest(swID, ts, good+" "+goodNew, swBody), keys: []string{swSecretNew, swSecret}, wantKey: "k0"},
		{name: "several signatures, valid among them", req: swRequest(swID, ts, strings.Join([]string{swWrongEntry, "v2," + swWrongEntry[3:], good, swWrongEntry}, " "), swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "several signatures, none valid", req: swRequest(swID, ts, swWrongEntry+" "+swWrongEntry, swBody), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		{name: "runs of spaces tolerated", req: swRequest(swID, ts, "  "+swWrongEntry+"   "+good+" ", swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "v1a ignored beside v1", req: swRequest(swID, ts, "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== "+good, swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "only v1a", req: swRequest(swID, ts, "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==", swBody), keys: []string{swSecret}, wantReason: ReasonMissingSignature},
		{name: "valid signature under another version", req: swRequest(swID, ts, "v2,"+good[3:], swBody), keys: []string{swSecret}, wantReason: ReasonMissingSignature},
		{name: "entry without a comma before a valid one", req: swRequest(swID, ts, "v1 "+good, swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "malformed entries before a valid one", req: swRequest(swID, ts, ",,, v1,not,base64  "+good, swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "partial signature", req: swRequest(swID, ts, "v1,", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed base64", req: swRequest(swID, ts, "v1,!!!!"+good[7:], swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "unpadded base64 signature", req: swRequest(swID, ts, strings.TrimRight(good, "="), swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "url-safe base64 signature", req: swRequest(swID, ts, "v1,"+strings.Repeat("_", 43)+"=", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "valid signature with trailing data", req: swRequest(swID, ts, good+",extra", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed beside a wrong v1", req: swRequest(swID, ts, swWrongEntry+" v1,bad", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "only entries without comma", req: swRequest(swID, ts, "garbage", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "empty signature header", req: swRequest(swID, ts, "", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "blank signature header", req: swRequest(swID, ts, "   ", swBody), keys: []string{swSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing signature header", req: swRequest(swID, ts, absent, swBody), keys: []string{swSecret}, wantReason: ReasonMissingSignature},
		{name: "missing everything", req: swRequest(absent, absent, absent, swBody), keys: []string{swSecret}, wantReason: ReasonMissingSignature},
		{name: "missing timestamp", req: swRequest(swID, absent, good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		{name: "empty timestamp", req: swRequest(swID, "", good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not an integer", req: swRequest(swID, ts+".5", good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp in RFC 3339", req: swRequest(swID, fixedNow.UTC().Format(time.RFC3339), good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp negative", req: swRequest(swID, "-"+ts, good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		{name: "missing id", req: swRequest(absent, ts, good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingEventID},
		{name: "empty id", req: swRequest("", ts, good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingEventID},
		{name: "missing timestamp reported before missing id", req: swRequest(absent, absent, good, swBody), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: swRequest(swID, strconv.FormatInt(now-301, 10), swEntry(t, swSecret, swID, now-301, swBody), swBody), keys: []string{swSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: swRequest(swID, strconv.FormatInt(now+301, 10), swEntry(t, swSecret, swID, now+301, swBody), swBody), keys: []string{swSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "exactly tolerance old is accepted", req: swRequest(swID, strconv.FormatInt(now-300, 10), swEntry(t, swSecret, swID, now-300, swBody), swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "exactly tolerance ahead is accepted", req: swRequest(swID, strconv.FormatInt(now+300, 10), swEntry(t, swSecret, swID, now+300, swBody), swBody), keys: []string{swSecret}, wantKey: "k0"},
		{name: "zero tolerance means the default", req: swRequest(swID, strconv.FormatInt(now-299, 10), swEntry(t, swSecret, swID, now-299, swBody), swBody), keys: []string{swSecret}, params: Params{Now: fixedNow}, wantKey: "k0"},
		{name: "bad signature beats stale timestamp", req: swRequest(swID, strconv.FormatInt(now-3600, 10), swEntry(t, swSecretNew, swID, now-3600, swBody), swBody), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		{name: "svix headers", req: &Request{Body: []byte(swBody), Headers: Headers{{"svix-id", swID}, {"svix-timestamp", ts}, {"svix-signature", good}}}, keys: []string{swSecret}, wantKey: "k0"},
		{name: "webhook headers preferred over svix", req: &Request{Body: []byte(swBody), Headers: Headers{{"svix-id", "other"}, {"svix-timestamp", "1"}, {"svix-signature", swWrongEntry}, {"Webhook-Id", swID}, {"Webhook-Timestamp", ts}, {"Webhook-Signature", good}}}, keys: []string{swSecret}, wantKey: "k0"},
		{name: "families are not mixed", req: &Request{Body: []byte(swBody), Headers: Headers{{"svix-id", swID}, {"webhook-timestamp", ts}, {"webhook-signature", good}}}, keys: []string{swSecret}, wantReason: ReasonMissingEventID},
		{name: "binary body", req: swRequest(swID, ts, swEntry(t, swSecret, swID, now, "\x00\xff\xfe"), "\x00\xff\xfe"), keys: []string{swSecret}, wantKey: "k0"},
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
			if tc.wantReason == 0 {
				id, _ := tc.req.Headers.Get("webhook-id")
				if id == "" {
					id, _ = tc.req.Headers.Get("svix-id")
				}
				if res.EventID != id {
					t.Fatalf("EventID = %q, want %q", res.EventID, id)
				}
			}
		})
	}
}

// TestStandardWebhooksPublishedVectors uses the known-answer vectors of the Standard Webhooks
// libraries (libraries/go/webhook_test.go TestWebhookSign, python/tests/test_webhooks.py).
func TestStandardWebhooksPublishedVectors(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	const ts = 1614265330
	at := time.Unix(ts, 0)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"libraries TestWebhookSign", []byte(swBody), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
		{"python binary payload", binary, "v1,sEcZ042G8Crqgxbybb3y0eDxQR3TcfYsk11I1XULhSI="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := swRequest(swID, strconv.Itoa(ts), tc.want, string(tc.body))
			res, err := p.Verify(req, keysFor(t, p, swSecret), Params{Now: at.Add(time.Minute), Tolerance: 5 * time.Minute})
			checkOutcome(t, res, err, 0, "k0", req)
			if res.EventID != swID {
				t.Fatalf("EventID = %q", res.EventID)
			}
			h, err := p.Sign(SignInput{Body: tc.body, EventID: swID, Timestamp: at}, []string{swSecret})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := h.Get("webhook-signature"); got != tc.want {
				t.Fatalf("Sign = %q, want %q", got, tc.want)
			}
		})
	}
	// The spec's example entry "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=" is
	// illustrative: the spec pairs it with msg_2KWPBgLlAfxdpx2AI54pPJ85f4W and 1674087231 and
	// gives neither secret nor body. It is not the signature of the library inputs above.
	t.Run("spec example entry is illustrative", func(t *testing.T) {
		t.Parallel()
		req := swRequest(swID, strconv.Itoa(ts), "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", swBody)
		res, err := p.Verify(req, keysFor(t, p, swSecret), Params{Now: at, Tolerance: 5 * time.Minute})
		checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	})
}

// TestStandardWebhooksOracle cross-checks with the Standard Webhooks Go library, which reads
// the real clock: deliveries are signed near time.Now().
func TestStandardWebhooksOracle(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	now := time.Now()
	params := Params{Now: now, Tolerance: 5 * time.Minute}

	t.Run("library signs, we verify", func(t *testing.T) {
		t.Parallel()
		for _, secret := range []string{swSecret, swSecretNew, strings.TrimPrefix(swSecret, "whsec_")} {
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			sig, err := wh.Sign(swID, now, []byte(swBody))
			if err != nil {
				t.Fatal(err)
			}
			req := swRequest(swID, strconv.FormatInt(now.Unix(), 10), sig, swBody)
			res, err := p.Verify(req, keysFor(t, p, secret), params)
			checkOutcome(t, res, err, 0, "k0", req)
		}
	})
	t.Run("we sign with two secrets, library verifies with each", func(t *testing.T) {
		t.Parallel()
		req := signed(t, p, SignInput{Body: []byte(swBody), EventID: swID, Timestamp: now}, swSecret, swSecretNew)
		hdr := http.Header{}
		for _, h := range req.Headers {
			hdr.Add(h.Name, h.Value)
		}
		for _, secret := range []string{swSecret, swSecretNew} {
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(req.Body, hdr); err != nil {
				t.Fatalf("library rejects our delivery: %v", err)
			}
			if err := wh.Verify(append(append([]byte(nil), req.Body...), ' '), hdr); err == nil {
				t.Fatal("library accepts a tampered body")
			}
		}
		other, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("someone else's key 24by")))
		if err := other.Verify(req.Body, hdr); err == nil {
			t.Fatal("library accepts our delivery under another key")
		}
	})
	t.Run("unpadded secret decodes like the padded one", func(t *testing.T) {
		t.Parallel()
		wh, err := standardwebhooks.NewWebhook(swSecretNew)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := wh.Sign(swID, now, []byte(swBody))
		req := swRequest(swID, strconv.FormatInt(now.Unix(), 10), sig, swBody)
		res, err := p.Verify(req, keysFor(t, p, strings.TrimRight(swSecretNew, "=")), params)
		checkOutcome(t, res, err, 0, "k0", req)
	})
	t.Run("agreement on rejections", func(t *testing.T) {
		t.Parallel()
		ts := now.Unix()
		good := swEntry(t, swSecret, swID, ts, swBody)
		wh, _ := standardwebhooks.NewWebhook(swSecret)
		for _, tc := range []struct{ id, ts, sig string }{
			{swID, strconv.FormatInt(ts, 10), swWrongEntry},
			{swID, strconv.FormatInt(ts, 10), "v1,"},
			{swID, strconv.FormatInt(ts, 10), "v2," + good[3:]},
			{swID, strconv.FormatInt(ts, 10), good + ",extra"},
			{swID + "x", strconv.FormatInt(ts, 10), good},
			{swID, strconv.FormatInt(ts+1, 10), good},
			{swID, "abc", good},
			{"", strconv.FormatInt(ts, 10), good},
			{swID, strconv.FormatInt(ts-400, 10), swEntry(t, swSecret, swID, ts-400, swBody)},
			{swID, strconv.FormatInt(ts+400, 10), swEntry(t, swSecret, swID, ts+400, swBody)},
		} {
			hdr := http.Header{}
			hdr.Set("webhook-id", tc.id)
			hdr.Set("webhook-timestamp", tc.ts)
			hdr.Set("webhook-signature", tc.sig)
			if wh.Verify([]byte(swBody), hdr) == nil {
				t.Errorf("library accepts %+v", tc)
			}
			if _, err := p.Verify(swRequest(tc.id, tc.ts, tc.sig, swBody), keysFor(t, p, swSecret), params); err == nil {
				t.Errorf("we accept %+v", tc)
			}
		}
	})
}

func TestStandardWebhooksParseSecret(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	want, _ := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	newKey, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(swSecretNew, "whsec_"))
	for _, tc := range []struct {
		name   string
		secret string
		want   []byte // nil: an error is expected
	}{
		{"whsec prefix", swSecret, want},
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", want},
		{"padded", swSecretNew, newKey},
		{"unpadded", strings.TrimRight(swSecretNew, "="), newKey},
		{"empty", "", nil},
		{"prefix only", "whsec_", nil},
		{"not base64", "whsec_not base64 at all!", nil},
		{"url-safe alphabet", "whsec_ab-_ab-_", nil},
		{"asymmetric secret key", "whsk_" + strings.TrimPrefix(swSecret, "whsec_"), nil},
		{"asymmetric public key", "whpk_" + strings.TrimPrefix(swSecret, "whsec_"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key, err := p.ParseSecret(tc.secret)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidSecret) {
					t.Fatalf("ParseSecret = %x, %v; want ErrInvalidSecret", key, err)
				}
				if body := strings.TrimPrefix(tc.secret, "whsec_"); len(body) > 3 && strings.Contains(err.Error(), body) {
					t.Fatalf("error %q echoes the secret", err)
				}
				return
			}
			if err != nil || string(key) != string(tc.want) {
				t.Fatalf("ParseSecret = %x, %v; want %x", key, err, tc.want)
			}
		})
	}
}

func TestStandardWebhooksSign(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	at := time.Unix(1_700_000_000, 0)
	h, err := p.Sign(SignInput{Body: []byte(swBody), EventID: swID, Timestamp: at}, []string{swSecret, swSecretNew})
	if err != nil {
		t.Fatal(err)
	}
	want := Headers{
		{Name: "webhook-id", Value: swID},
		{Name: "webhook-timestamp", Value: "1700000000"},
		{Name: "webhook-signature", Value: swEntry(t, swSecret, swID, at.Unix(), swBody) + " " + swEntry(t, swSecretNew, swID, at.Unix(), swBody)},
	}
	if len(h) != len(want) {
		t.Fatalf("Sign = %+v", h)
	}
	for i := range want {
		if h[i] != want[i] {
			t.Fatalf("header %d = %+v, want %+v", i, h[i], want[i])
		}
	}
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte(swBody), EventID: swID, Timestamp: at}, nil},
		{"no event id", SignInput{Body: []byte(swBody), Timestamp: at}, []string{swSecret}},
		{"no timestamp", SignInput{Body: []byte(swBody), EventID: swID}, []string{swSecret}},
		{"undecodable secret", SignInput{Body: []byte(swBody), EventID: swID, Timestamp: at}, []string{"whsec_!!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}
