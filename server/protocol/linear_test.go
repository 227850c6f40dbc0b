package protocol

import (
	"strconv"
	"testing"
	"time"
)

const (
	linearSecret    = "lin_wh_6f1c2e3d4b5a69788796a5b4c3d2e1f0a1b2c3d4e5f60718"
	linearSecretNew = "lin_wh_0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7"
	linearDelivery  = "234d1a4e-b617-4388-90fe-adc3633d6b72"
)

// linearBody is an Issue create payload stamped at t (webhookTimestamp in ms).
func linearBody(t time.Time) string {
	return `{"action":"create","type":"Issue","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","title":"Bug"},"webhookTimestamp":` + strconv.FormatInt(t.UnixMilli(), 10) + `}`
}

// linearRequest signs body independently (hex HMAC-SHA256 of the body, as @linear/sdk does).
func linearRequest(body, secret string) *Request {
	return &Request{Method: "POST", Body: []byte(body), Headers: Headers{
		{Name: "linear-signature", Value: hmacSHA256Hex(secret, body)}, {Name: "Linear-Delivery", Value: linearDelivery},
	}}
}

func TestLinearVerify(t *testing.T) {
	t.Parallel()
	p := Linear()
	body := linearBody(fixedNow)
	in := SignInput{Body: []byte(body), EventID: linearDelivery, Timestamp: fixedNow}
	good := signed(t, p, in, linearSecret)
	fx := signingFixture{
		p: p, secret: linearSecret, secretNew: linearSecretNew, in: in, wantEvent: linearDelivery,
		sigHeader: "linear-signature",
		noID:      withoutHeader(good, "Linear-Delivery"),
		malformed: []string{"garbage", "sha256=" + hmacSHA256Hex(linearSecret, body), hmacSHA256Hex(linearSecret, body)[:60]},
	}
	cs := fx.cases(t)
	at := func(d time.Duration) *Request { return linearRequest(linearBody(fixedNow.Add(d)), linearSecret) }
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: linearRequest(body, linearSecret), keys: []string{linearSecret}, wantKey: "k0", wantEvent: linearDelivery},
		verifyCase{name: "stale (61 s)", req: at(-61 * time.Second), keys: []string{linearSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "future (61 s)", req: at(61 * time.Second), keys: []string{linearSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "exactly 60 s old accepted", req: at(-60 * time.Second), keys: []string{linearSecret}, wantKey: "k0", wantEvent: linearDelivery},
		verifyCase{name: "60.001 s old rejected (milliseconds count)", req: at(-60*time.Second - time.Millisecond), keys: []string{linearSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "endpoint tolerance wider", req: at(-10 * time.Minute), keys: []string{linearSecret}, params: Params{Tolerance: 15 * time.Minute}, wantKey: "k0", wantEvent: linearDelivery},
		verifyCase{name: "timestamp in seconds is far in the past", req: linearRequest(`{"webhookTimestamp":`+strconv.FormatInt(fixedNow.Unix(), 10)+`}`, linearSecret), keys: []string{linearSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "no webhookTimestamp", req: linearRequest(`{"action":"create"}`, linearSecret), keys: []string{linearSecret}, wantReason: ReasonMissingTimestamp},
		verifyCase{name: "webhookTimestamp a string", req: linearRequest(`{"webhookTimestamp":"1700000000000"}`, linearSecret), keys: []string{linearSecret}, wantReason: ReasonMissingTimestamp},
		verifyCase{name: "webhookTimestamp fractional", req: linearRequest(`{"webhookTimestamp":1.7e12}`, linearSecret), keys: []string{linearSecret}, wantReason: ReasonMissingTimestamp},
		verifyCase{name: "body not JSON", req: linearRequest(`not json`, linearSecret), keys: []string{linearSecret}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "bad signature beats stale timestamp", req: linearRequest(linearBody(fixedNow.Add(-time.Hour)), linearSecretNew), keys: []string{linearSecret}, wantReason: ReasonSignatureMismatch},
	)
	runVerifyCases(t, p, cs)
}

// TestLinearSignDelivery: SignDelivery stamps webhookTimestamp and signs the stamped body, as
// @linear/sdk's verify expects (no published vector exists; the value below is openssl's:
// printf '%s' "$stamped" | openssl dgst -sha256 -hmac "$linearSecret").
func TestLinearSignDelivery(t *testing.T) {
	t.Parallel()
	p := Linear()
	s, err := SignDelivery(p, SignInput{Body: []byte(`{"type":"Issue","webhookTimestamp":0,"action":"create"}`), EventID: linearDelivery, Timestamp: time.Unix(1700000000, 0)}, []string{linearSecret})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"action":"create","type":"Issue","webhookTimestamp":1700000000000}`; string(s.Body) != want {
		t.Fatalf("body %s, want %s", s.Body, want)
	}
	if got := header(&Request{Headers: s.Headers}, "linear-signature"); got != linearOpenSSL {
		t.Fatalf("signature %s, want %s", got, linearOpenSSL)
	}
	if _, err := SignDelivery(p, SignInput{Body: []byte(`[]`), EventID: "x", Timestamp: fixedNow}, []string{linearSecret}); err == nil {
		t.Fatal("a non-object body was signed")
	}
}

func FuzzLinearSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Linear(), linearSecret, "linear-signature",
		SignInput{Body: []byte(linearBody(fixedNow)), EventID: linearDelivery, Timestamp: fixedNow}, Params{Now: fixedNow},
		"", "sha256=0", "ABCDEF")
}

// FuzzLinearBody: any body under a valid signature is answered with an acceptance or a
// rejection, never a panic, and accepted only with webhookTimestamp within the tolerance.
func FuzzLinearBody(f *testing.F) {
	p := Linear()
	keys := keysFor(f, p, linearSecret)
	f.Add(linearBody(fixedNow))
	f.Add(`{"webhookTimestamp":-9223372036854775808}`)
	f.Add(`{"webhookTimestamp":1e400}`)
	f.Fuzz(func(t *testing.T, body string) {
		res, err := p.Verify(linearRequest(body, linearSecret), keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		if err == nil {
			ms, terr := linearTimestamp([]byte(body))
			if terr != nil || ms < fixedNow.UnixMilli()-60000 || ms > fixedNow.UnixMilli()+60000 || res.EventID != linearDelivery {
				t.Fatalf("accepted %q: %+v", body, res)
			}
		}
	})
}

const linearOpenSSL = "5f8fe33c13f8dd1627a4e63dad89bfe11af389758ea4061f4b5da3953ef7112b"
