package protocol

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	workosSecret    = "secret"
	workosSecretNew = "wk5HzQ2rX9bP1mN4vC7tY0aL3"
	workosEventID   = "event_01FAEAJCR3ZBZ30D8BD1924TVG"
)

// workosHeader mirrors workos-go pkg/webhooks/client_test.go mockWebhookHeader: t is unix
// milliseconds, v1 the hex HMAC-SHA256 of "{t}.{body}", joined by ", ".
func workosHeader(at time.Time, secret, body string) string {
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	return "t=" + ms + ", v1=" + hmacSHA256Hex(secret, ms+"."+body)
}

func workosRequest(sig, body string) *Request {
	return &Request{Method: "POST", Body: []byte(body), Headers: Headers{{Name: "WorkOS-Signature", Value: sig}}}
}

func TestWorkOSVerify(t *testing.T) {
	t.Parallel()
	p := WorkOS()
	body := string(ExampleBody(p, workosEventID))
	in := SignInput{Body: []byte(body), Timestamp: fixedNow}
	good := workosHeader(fixedNow, workosSecret, body)
	wrong := strings.Repeat("ef", 32)
	ms := strconv.FormatInt(fixedNow.UnixMilli(), 10)
	fx := signingFixture{
		p: p, secret: workosSecret, secretNew: workosSecretNew, in: in, wantEvent: workosEventID,
		sigHeader: "WorkOS-Signature",
		noID:      workosRequest(workosHeader(fixedNow, workosSecret, `{"event":"x"}`), `{"event":"x"}`),
		// workos-node webhooks.spec.ts: empty header, empty hash, "99999" hash; workos-go: "some_junk".
		malformed: []string{"some_junk", "t=" + ms + ", v1=", "t=" + ms + ", v1=99999", "v1=" + wrong, "t=1.5, v1=" + wrong},
		missing:   []string{"t=" + ms, "t=" + ms + ", v0=" + wrong},
	}
	cs := fx.cases(t)
	at := func(d time.Duration) *Request {
		return workosRequest(workosHeader(fixedNow.Add(d), workosSecret, body), body)
	}
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: workosRequest(good, body), keys: []string{workosSecret}, wantKey: "k0", wantEvent: workosEventID},
		verifyCase{name: "no space after the comma", req: workosRequest(strings.Replace(good, ", ", ",", 1), body), keys: []string{workosSecret}, wantKey: "k0", wantEvent: workosEventID},
		verifyCase{name: "invalid payload (workos-node)", req: workosRequest(good, "invalid"), keys: []string{workosSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "invalid secret (workos-node)", req: workosRequest(good, body), keys: []string{"invalid"}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "timestamp 9999 outside tolerance (workos-node)", req: workosRequest(workosHeader(time.UnixMilli(9999), workosSecret, body), body), keys: []string{workosSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "181 s old (workos-go tolerance + 1 s)", req: at(-181 * time.Second), keys: []string{workosSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "future 181 s", req: at(181 * time.Second), keys: []string{workosSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "200 s old with a 240 s endpoint tolerance (workos-go)", req: at(-200 * time.Second), keys: []string{workosSecret}, params: Params{Tolerance: 240 * time.Second}, wantKey: "k0", wantEvent: workosEventID},
		verifyCase{name: "exactly 180 s old accepted", req: at(-180 * time.Second), keys: []string{workosSecret}, wantKey: "k0", wantEvent: workosEventID},
		verifyCase{name: "180.001 s old rejected", req: at(-180*time.Second - time.Millisecond), keys: []string{workosSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "seconds instead of milliseconds are far in the past", req: workosRequest("t="+strconv.FormatInt(fixedNow.Unix(), 10)+", v1="+hmacSHA256Hex(workosSecret, strconv.FormatInt(fixedNow.Unix(), 10)+"."+body), body), keys: []string{workosSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "timestamp tampered", req: workosRequest(strings.Replace(good, "t="+ms, "t="+strconv.FormatInt(fixedNow.UnixMilli()+1, 10), 1), body), keys: []string{workosSecret}, wantReason: ReasonSignatureMismatch},
	)
	runVerifyCases(t, p, cs)
}

// TestWorkOSSign: Sign writes the header exactly as workos-go's mockWebhookHeader builds it.
func TestWorkOSSign(t *testing.T) {
	t.Parallel()
	body := `{'data': 'foobar'}`
	at := time.Unix(1700000000, 0)
	h, err := WorkOS().Sign(SignInput{Body: []byte(body), Timestamp: at}, []string{workosSecret})
	if err != nil {
		t.Fatal(err)
	}
	if want := workosHeader(at, workosSecret, body); len(h) != 1 || h[0].Value != want {
		t.Fatalf("Sign = %+v, want %s", h, want)
	}
	if want := "t=1700000000000, v1=" + workosOpenSSL; h[0].Value != want {
		t.Fatalf("Sign = %s, want openssl's %s", h[0].Value, want)
	}
}

func FuzzWorkOSSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, WorkOS(), workosSecret, "WorkOS-Signature",
		SignInput{Body: ExampleBody(WorkOS(), workosEventID), Timestamp: fixedNow}, Params{Now: fixedNow},
		"some_junk", "t=1, v1=", ", ,=")
}

// printf %s "1700000000000.{'data': 'foobar'}" | openssl dgst -sha256 -hmac secret
const workosOpenSSL = "2928c3dff5ffff43ac3158e9028a97e1a6bbc134e81788f16f0e5e1f6ac24d14"
