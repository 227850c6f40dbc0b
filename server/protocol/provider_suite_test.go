package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// providerSuite runs, table-driven, the cases every provider tested with it must pass:
// accepted, body tampered by one trailing space, wrong secret, no keys, malformed and missing
// signature header, two secrets during rotation, several signatures in one delivery (where
// the provider sends several), stale and future timestamps (where signed), and a delivery
// without identity.
type providerSuite struct {
	p *Protocol
	// secret and secret2 are two secrets in the provider's format (shared: signing == verifying).
	secret, secret2 string
	// verify1 and verify2 are the verifying forms; empty means the same as the secret.
	verify1, verify2 string
	// sigHeader is the header carrying the signature.
	sigHeader string
	// eventID is passed to Sign and ExampleBody; wantEventID is the identity Verify must return
	// (computed from the signed body when wantEventIDFor is set).
	eventID        string
	wantEventID    string
	wantEventIDFor func(body []byte) string
	// malformed are values of sigHeader that must be rejected as malformed.
	malformed []string
	// multiSig says Sign with several secrets puts one signature per secret in the delivery.
	multiSig bool
	// noIdentity returns a correctly signed delivery without an event identity.
	noIdentity func(t *testing.T) *Request
	// url is the URL deliveries are signed for and sent to.
	url string
}

func (s providerSuite) verifying(i int) string {
	switch {
	case i == 1 && s.verify1 != "":
		return s.verify1
	case i == 2 && s.verify2 != "":
		return s.verify2
	case i == 1:
		return s.secret
	}
	return s.secret2
}

func (s providerSuite) input(at time.Time) SignInput {
	url := s.url
	if url == "" {
		url = "https://hooks.example.com/x"
	}
	return SignInput{Body: ExampleBody(s.p, s.eventID), EventID: s.eventID, Timestamp: at, Method: "POST", URL: url}
}

// deliver signs the example body at the given time with secrets, as the provider would.
func (s providerSuite) deliver(t *testing.T, at time.Time, secrets ...string) *Request {
	t.Helper()
	in := s.input(at)
	d, err := SignDelivery(s.p, in, secrets)
	if err != nil {
		t.Fatalf("SignDelivery: %v", err)
	}
	return &Request{Method: in.Method, URL: in.URL, Headers: d.Headers, Body: d.Body}
}

func (s providerSuite) run(t *testing.T) {
	t.Helper()
	p := s.p
	tol := p.DefaultTolerance
	params := Params{Now: fixedNow, Tolerance: tol}
	k1 := s.verifying(1)
	k2 := s.verifying(2)
	ok := s.deliver(t, fixedNow, s.secret)
	type tc struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
	}
	cases := []tc{
		{name: "accepted", req: ok, keys: []string{k1}, wantKey: "k0"},
		{name: "body tampered (one trailing space)", req: withBody(ok, append(append([]byte(nil), ok.Body...), ' ')), keys: []string{k1}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: ok, keys: []string{k2}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: ok, wantReason: ReasonSignatureMismatch},
		{name: "missing signature header", req: withoutHeader(ok, s.sigHeader), keys: []string{k1}, wantReason: ReasonMissingSignature},
		{name: "rotation: old secret signs, second key matches", req: ok, keys: []string{k2, k1}, wantKey: "k1"},
		{name: "rotation: new secret signs, second key matches", req: s.deliver(t, fixedNow, s.secret2), keys: []string{k1, k2}, wantKey: "k1"},
	}
	for i, v := range s.malformed {
		cases = append(cases, tc{name: "malformed header " + string(rune('a'+i)), req: withHeader(ok, s.sigHeader, v), keys: []string{k1}, wantReason: ReasonMalformedSignature})
	}
	if s.multiSig {
		both := s.deliver(t, fixedNow, s.secret2, s.secret)
		cases = append(cases,
			tc{name: "several signatures: old key matches", req: both, keys: []string{k1}, wantKey: "k0"},
			tc{name: "several signatures: new key matches", req: both, keys: []string{k2}, wantKey: "k0"},
			tc{name: "several signatures: neither key", req: both, keys: []string{s.otherSecret(t)}, wantReason: ReasonSignatureMismatch},
		)
	}
	if p.SignsTimestamp {
		cases = append(cases,
			tc{name: "stale timestamp", req: s.deliver(t, fixedNow.Add(-tol-time.Second), s.secret), keys: []string{k1}, wantReason: ReasonTimestampOutOfTolerance},
			tc{name: "future timestamp", req: s.deliver(t, fixedNow.Add(tol+time.Second), s.secret), keys: []string{k1}, wantReason: ReasonTimestampOutOfTolerance},
			tc{name: "old boundary accepted", req: s.deliver(t, fixedNow.Add(-tol), s.secret), keys: []string{k1}, wantKey: "k0"},
			tc{name: "future boundary accepted", req: s.deliver(t, fixedNow.Add(tol), s.secret), keys: []string{k1}, wantKey: "k0"},
			tc{name: "stale timestamp with wrong secret is a mismatch", req: s.deliver(t, fixedNow.Add(-tol-time.Hour), s.secret), keys: []string{k2}, wantReason: ReasonSignatureMismatch},
		)
	}
	if s.noIdentity != nil {
		cases = append(cases, tc{name: "missing identity", req: s.noIdentity(t), keys: []string{k1}, wantReason: ReasonMissingEventID})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(c.req, keysFor(t, p, c.keys...), params)
			checkOutcome(t, res, err, c.wantReason, c.wantKey, c.req)
			if c.wantReason == 0 {
				want := s.wantEventID
				if s.wantEventIDFor != nil {
					want = s.wantEventIDFor(c.req.Body)
				}
				if res.EventID != want {
					t.Fatalf("EventID = %q, want %q", res.EventID, want)
				}
				if res.Handshake != nil {
					t.Fatalf("a delivery was taken for a handshake")
				}
			}
		})
	}
	t.Run("example secrets parse", func(t *testing.T) {
		t.Parallel()
		for i := 0; i < 3; i++ {
			sg, vf, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.ParseSecret(vf); err != nil {
				t.Fatalf("ParseSecret(example) = %v", err)
			}
			if sg == "" {
				t.Fatal("empty signing secret")
			}
		}
	})
	t.Run("sign refuses no secret", func(t *testing.T) {
		t.Parallel()
		if _, err := SignDelivery(p, s.input(fixedNow), nil); err == nil {
			t.Fatal("signed without a secret")
		}
	})
}

func (s providerSuite) otherSecret(t *testing.T) string {
	t.Helper()
	_, v, err := s.p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkSecretsRefused checks that ParseSecret refuses each of bad with ErrInvalidSecret and without
// quoting it.
func checkSecretsRefused(t *testing.T, p *Protocol, bad ...string) {
	t.Helper()
	for _, b := range bad {
		_, err := p.ParseSecret(b)
		if err == nil {
			t.Errorf("ParseSecret(%q) accepted", b)
			continue
		}
		if !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("ParseSecret(%q) = %v, not ErrInvalidSecret", b, err)
		}
		if len(b) >= 4 && strings.Contains(err.Error(), b) {
			t.Errorf("ParseSecret error quotes the secret: %v", err)
		}
	}
}

// verifyFuzzedHeader is the body of a signature-header fuzz target for a provider signed with
// SignDelivery: any header value gets an acceptance or a *Rejection, and a delivery we signed
// stops authenticating when any byte of its signature header changes.
func verifyFuzzedHeader(t *testing.T, p *Protocol, secret, header string, extra Headers, sig string, body []byte, pos uint16, repl byte, now time.Time, url string) {
	keys := keysFor(t, p, secret)
	params := Params{Now: now, Tolerance: p.DefaultTolerance}
	h := append(Headers{{Name: header, Value: sig}}, extra...)
	_, err := p.Verify(&Request{Method: "POST", URL: url, Headers: h, Body: body}, keys, params)
	checkAnswer(t, err)
	d, err := SignDelivery(p, SignInput{Body: body, EventID: "evt_fuzz", Timestamp: now, Method: "POST", URL: url}, []string{secret})
	if err != nil {
		t.Skip("not signable:", err)
	}
	req := &Request{Method: "POST", URL: url, Headers: d.Headers, Body: d.Body}
	checkMutation(t, p, keys, params, req, header, pos, repl)
}
