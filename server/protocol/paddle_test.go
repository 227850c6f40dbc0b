package protocol

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// The published example of paddle-go-sdk example_webhook_verifier_test.go (PaddleHQ/
// paddle-go-sdk): secret key, Paddle-Signature and payload.
const (
	paddleSecret     = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	paddleSecretNew  = "pdl_ntfset_01hsdnzzzzzzzzzzzzzzzzzzzz_0123456789abcdefghijklmnopqrstu"
	paddleVectorSig  = "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"
	paddleVectorTS   = 1710929255
	paddleEventID    = "evt_01hsdn97563968dy0szkmgjwh3"
	paddleVectorBody = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`
)

func paddleRequest(sig, body string) *Request {
	return &Request{Method: "POST", Body: []byte(body), Headers: Headers{{Name: "Paddle-Signature", Value: sig}}}
}

// paddleHeader signs independently: h1 = hex HMAC-SHA256 of "{ts}:{body}".
func paddleHeader(ts int64, body, secret string) string {
	t := strconv.FormatInt(ts, 10)
	return "ts=" + t + ";h1=" + hmacSHA256Hex(secret, t+":"+body)
}

func TestPaddleVerify(t *testing.T) {
	t.Parallel()
	p := Paddle()
	now := fixedNow.Unix()
	body := string(ExampleBody(p, paddleEventID))
	in := SignInput{Body: []byte(body), Timestamp: fixedNow}
	good := paddleHeader(now, body, paddleSecret)
	wrong := strings.Repeat("cd", 32)
	fx := signingFixture{
		p: p, secret: paddleSecret, secretNew: paddleSecretNew, in: in, wantEvent: paddleEventID,
		sigHeader: "Paddle-Signature",
		noID:      paddleRequest(paddleHeader(now, `{"notification_id":"ntf_1"}`, paddleSecret), `{"notification_id":"ntf_1"}`),
		malformed: []string{"garbage", "h1=" + wrong, "ts=abc;h1=" + wrong, "ts=1;ts=2;h1=" + wrong, "ts=" + strconv.FormatInt(now, 10) + ";h1=XYZ", strings.Replace(good, ";", ",", 1), good + ";"},
		missing:   []string{"ts=" + strconv.FormatInt(now, 10), "ts=" + strconv.FormatInt(now, 10) + ";h2=" + wrong},
	}
	cs := fx.cases(t)
	at := func(d time.Duration) *Request {
		return paddleRequest(paddleHeader(now+int64(d/time.Second), body, paddleSecret), body)
	}
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: paddleRequest(good, body), keys: []string{paddleSecret}, wantKey: "k0", wantEvent: paddleEventID},
		verifyCase{name: "published vector", req: paddleRequest(paddleVectorSig, paddleVectorBody), keys: []string{paddleSecret}, params: Params{Now: time.Unix(paddleVectorTS+3, 0)}, wantKey: "k0", wantEvent: paddleEventID},
		verifyCase{name: "published vector, a year later", req: paddleRequest(paddleVectorSig, paddleVectorBody), keys: []string{paddleSecret}, params: Params{Now: time.Unix(paddleVectorTS+365*86400, 0)}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "several h1 and an h2 (paddle-node-sdk multi-hash case)", req: paddleRequest(good+";h1="+wrong+";h2=RANDOM_HASH", body), keys: []string{paddleSecret}, wantKey: "k0", wantEvent: paddleEventID},
		verifyCase{name: "timestamp tampered", req: paddleRequest(strings.Replace(good, "ts="+strconv.FormatInt(now, 10), "ts="+strconv.FormatInt(now-1, 10), 1), body), keys: []string{paddleSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "stale", req: at(-301 * time.Second), keys: []string{paddleSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "future", req: at(301 * time.Second), keys: []string{paddleSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "exactly 300 s old accepted", req: at(-300 * time.Second), keys: []string{paddleSecret}, wantKey: "k0", wantEvent: paddleEventID},
		verifyCase{name: "SDK-strict endpoint tolerance of 5 s", req: at(-6 * time.Second), keys: []string{paddleSecret}, params: Params{Tolerance: 5 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "event_id not notification_id", req: paddleRequest(paddleHeader(now, `{"event_id":"evt_2","notification_id":"ntf_2"}`, paddleSecret), `{"event_id":"evt_2","notification_id":"ntf_2"}`), keys: []string{paddleSecret}, wantKey: "k0", wantEvent: "evt_2"},
		verifyCase{name: "stale timestamp beats bad body", req: paddleRequest(paddleHeader(now-3600, "x", paddleSecret), "x"), keys: []string{paddleSecret}, wantReason: ReasonTimestampOutOfTolerance},
	)
	runVerifyCases(t, p, cs)
}

func TestPaddleSignMatchesVector(t *testing.T) {
	t.Parallel()
	h, err := Paddle().Sign(SignInput{Body: []byte(paddleVectorBody), Timestamp: time.Unix(paddleVectorTS, 0)}, []string{paddleSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "Paddle-Signature" || h[0].Value != paddleVectorSig {
		t.Fatalf("Sign = %+v, want %s", h, paddleVectorSig)
	}
}

func FuzzPaddleSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Paddle(), paddleSecret, "Paddle-Signature",
		SignInput{Body: []byte(paddleVectorBody), Timestamp: fixedNow}, Params{Now: fixedNow, Tolerance: 300 * time.Second},
		paddleVectorSig, "ts=;h1=", ";;=;")
}
