package protocol

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	calendlySecret    = "a9d4b1c7e2f8a3b6c0d5e9f1a7b3c8d2e4f6a0b5c9d1e3f7a2b4c6d8e0f1a3b5"
	calendlySecretNew = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	calendlyBody      = `{"created_at":"2023-11-14T22:13:20.000000Z","event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA"}}`
)

// calendlyHeader is computed independently of calendly.go: t and v1 = hex HMAC-SHA256 of
// "{t}.{body}", as Calendly's overview documents.
func calendlyHeader(ts int64, body, secret string) string {
	t := strconv.FormatInt(ts, 10)
	return "t=" + t + ",v1=" + hmacSHA256Hex(secret, t+"."+body)
}

func calendlyRequest(sig, body string) *Request {
	return &Request{Method: "POST", Body: []byte(body), Headers: Headers{{Name: "Calendly-Webhook-Signature", Value: sig}}}
}

func TestCalendlyVerify(t *testing.T) {
	t.Parallel()
	p := Calendly()
	now := fixedNow.Unix()
	in := SignInput{Body: []byte(calendlyBody), Timestamp: fixedNow}
	wantID := bodySHA256ID([]byte(calendlyBody))
	good := calendlyHeader(now, calendlyBody, calendlySecret)
	wrong := strings.Repeat("ab", 32)
	fx := signingFixture{
		p: p, secret: calendlySecret, secretNew: calendlySecretNew, in: in, wantEvent: wantID,
		sigHeader: "Calendly-Webhook-Signature",
		malformed: []string{"garbage", "v1=" + wrong, "t=x,v1=" + wrong, "t=,v1=" + wrong, "t=-1,v1=" + wrong, "t=1,t=2,v1=" + wrong, "t=" + strconv.FormatInt(now, 10) + ",v1=zz", good + ",", good + ",v1", "t=1,v1=a=b"},
		missing:   []string{"t=" + strconv.FormatInt(now, 10), "t=" + strconv.FormatInt(now, 10) + ",v0=" + wrong},
	}
	cs := fx.cases(t)
	at := func(d time.Duration) *Request {
		return calendlyRequest(calendlyHeader(now+int64(d/time.Second), calendlyBody, calendlySecret), calendlyBody)
	}
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: calendlyRequest(good, calendlyBody), keys: []string{calendlySecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "timestamp tampered", req: calendlyRequest(strings.Replace(good, "t="+strconv.FormatInt(now, 10), "t="+strconv.FormatInt(now+1, 10), 1), calendlyBody), keys: []string{calendlySecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "several v1, one matches", req: calendlyRequest(good+",v1="+wrong, calendlyBody), keys: []string{calendlySecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "v1 before t, spaces after commas", req: calendlyRequest("v1="+good[strings.Index(good, "v1=")+3:]+", t="+strconv.FormatInt(now, 10), calendlyBody), keys: []string{calendlySecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "stale", req: at(-301 * time.Second), keys: []string{calendlySecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "future", req: at(301 * time.Second), keys: []string{calendlySecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "exactly 300 s old accepted", req: at(-300 * time.Second), keys: []string{calendlySecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "exactly 300 s ahead accepted", req: at(300 * time.Second), keys: []string{calendlySecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "endpoint tolerance of 24 h accepts an old retry", req: at(-23 * time.Hour), keys: []string{calendlySecret}, params: Params{Tolerance: 24 * time.Hour}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "bad signature beats stale timestamp", req: calendlyRequest(calendlyHeader(now-3600, calendlyBody, calendlySecretNew), calendlyBody), keys: []string{calendlySecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "different bodies, different identities", req: calendlyRequest(calendlyHeader(now, calendlyBody+"\n", calendlySecret), calendlyBody+"\n"), keys: []string{calendlySecret}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(calendlyBody + "\n"))},
	)
	runVerifyCases(t, p, cs)
}

// TestCalendlyDocumentedAlgorithm: Calendly publishes no fixed vector, so Sign is pinned to a
// value computed with openssl from the documented construction:
// printf '1700000000.%s' "$calendlyBody" | openssl dgst -sha256 -hmac "$calendlySecret"
func TestCalendlyDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Calendly().Sign(SignInput{Body: []byte(calendlyBody), Timestamp: time.Unix(1700000000, 0)}, []string{calendlySecret, calendlySecretNew})
	if err != nil {
		t.Fatal(err)
	}
	if want := "t=1700000000,v1=" + calendlyOpenSSL; len(h) != 1 || h[0].Value != want {
		t.Fatalf("Sign = %+v, want %s", h, want)
	}
	if id := bodySHA256ID([]byte(calendlyBody)); id != "body-sha256:"+calendlyBodySHA256 {
		t.Fatalf("identity %s", id)
	}
}

func FuzzCalendlySignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Calendly(), calendlySecret, "Calendly-Webhook-Signature",
		SignInput{Body: []byte(calendlyBody), Timestamp: fixedNow}, Params{Now: fixedNow, Tolerance: 300 * time.Second},
		"t=1,v1=", ",,=,t==", "v1=abc, t=17")
}

const (
	calendlyOpenSSL    = "ae312ebf3c6f90b49108e01b5724d04b1e3a6ccb6b560bc420b2ca3284c6d54c"
	calendlyBodySHA256 = "d17a4c5962231bd02aa2254477e1c5da0e973d7254284e429f17fddcbee68780"
)
