package protocol

import (
	"strings"
	"testing"
	"time"
)

// Persona publishes no vector: the tests follow the documented algorithm
// (https://docs.withpersona.com/docs/webhooks-best-practices) and recompute HMAC-SHA256 of
// "{t}.{body}" independently with openssl (see personaVector below).
const (
	personaSecret  = "wbhsec_0c2f1e3a4b5d6e7f8091a2b3c4d5e6f7"
	personaSecret2 = "wbhsec_f7e6d5c4b3a2918070f6e5d4c3b2a190"
	// personaVector is `printf '%s' '1700000000.{"data":{"type":"event","id":"evt_1"}}' |
	// openssl dgst -sha256 -hmac wbhsec_0c2f1e3a4b5d6e7f8091a2b3c4d5e6f7`.
	personaVectorBody = `{"data":{"type":"event","id":"evt_1"}}`
	personaVectorSig  = "3dda8791b5bd85e9f78812c0c9db95beee0c3f64995ec7aadc3482ba46100f8c"
)

func TestPersonaVerify(t *testing.T) {
	t.Parallel()
	sig := strings.Repeat("ab", 32)
	providerSuite{
		p: Persona(), secret: personaSecret, secret2: personaSecret2,
		sigHeader: "Persona-Signature", eventID: "evt_1nAmd7WfDjCc5V2vpZzL6X3N", wantEventID: "evt_1nAmd7WfDjCc5V2vpZzL6X3N",
		multiSig:  true,
		malformed: []string{"", " ", "v1=" + sig, "t=1700000000,v1=" + strings.ToUpper(sig), "t=1700000000,v1=" + sig + " v1=" + sig, "t=x,v1=" + sig, "t=1700000000,v1"},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, Persona(), SignInput{Body: []byte(`{"data":{"type":"event"}}`), Timestamp: fixedNow}, personaSecret)
		},
	}.run(t)
}

func TestPersonaSets(t *testing.T) {
	t.Parallel()
	p := Persona()
	body := personaExampleBody("evt_x")
	now := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, personaSecret)
	old := signed(t, p, SignInput{Body: body, Timestamp: fixedNow.Add(-time.Hour)}, personaSecret2)
	cur := header(now, "Persona-Signature")
	for _, tc := range []struct {
		name, value string
		keys        []string
		wantReason  Reason
		wantKey     string
	}{
		{name: "matching set's own t is checked", value: header(old, "Persona-Signature") + " " + cur, keys: []string{personaSecret2}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "fresh set authenticates alongside a stale one", value: header(old, "Persona-Signature") + " " + cur, keys: []string{personaSecret2, personaSecret}, wantKey: "k1"},
		{name: "fresh set alone", value: cur, keys: []string{personaSecret2, personaSecret}, wantKey: "k1"},
		{name: "several spaces between sets", value: cur + "   t=1700000000,v1=" + strings.Repeat("cd", 32), keys: []string{personaSecret}, wantKey: "k0"},
		{name: "unknown scheme ignored", value: cur + ",v2=zz", keys: []string{personaSecret}, wantKey: "k0"},
		{name: "a set's v1 with another set's t does not match", value: "t=1699999999," + strings.SplitN(cur, ",", 2)[1], keys: []string{personaSecret}, wantReason: ReasonSignatureMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := withHeader(now, "Persona-Signature", tc.value)
			res, err := p.Verify(req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, req)
		})
	}
}

func TestPersonaRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Persona()
	const want = "t=1700000000,v1=" + personaVectorSig
	req := &Request{Method: "POST", Headers: Headers{{Name: "Persona-Signature", Value: want}}, Body: []byte(personaVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, personaSecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "evt_1" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(personaVectorBody), Timestamp: fixedNow}, []string{personaSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("Persona-Signature"); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	checkSecretsRefused(t, p, "", " wbhsec_x")
}

func FuzzPersonaSignatureHeader(f *testing.F) {
	f.Add("t=1700000000,v1="+personaVectorSig, []byte(personaVectorBody), uint16(3), byte('1'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Persona(), personaSecret, "Persona-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
