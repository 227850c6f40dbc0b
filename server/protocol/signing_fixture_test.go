package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strings"
	"testing"
	"time"
)

// verifyCase is one Verify expectation, run by runVerifyCases.
type verifyCase struct {
	name       string
	req        *Request
	keys       []string // secrets, as k0, k1, ...
	params     Params   // zero Now means fixedNow; zero Tolerance means the default
	wantReason Reason
	wantKey    string
	wantEvent  string
}

// runVerifyCases runs the cases against p in parallel subtests.
func runVerifyCases(t *testing.T, p *Protocol, cases []verifyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params.Now = fixedNow
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
			if tc.wantReason == 0 && res.Handshake != nil {
				t.Fatalf("a delivery was answered as a handshake: %+v", res.Handshake)
			}
		})
	}
}

// signingFixture describes a provider whose deliveries p.Sign makes, for the cases every such
// provider must pass.
type signingFixture struct {
	p                 *Protocol
	secret, secretNew string
	// other is a third well-formed secret that signed nothing ("unrelated-secret-value" if empty).
	other     string
	in        SignInput // a delivery that carries an identity
	wantEvent string
	sigHeader string
	// list says the provider sends one signature per secret in sigHeader.
	list bool
	// noID, when set, is a correctly signed delivery without an identity.
	noID *Request
	// malformed are sigHeader values that must be rejected as malformed.
	malformed []string
	// missing are sigHeader values that must be rejected as carrying no signature of ours.
	missing []string
}

// cases returns the common cases: acceptance, a tampered body, wrong secret, no key, missing
// and malformed headers, rotation and missing identity.
func (f signingFixture) cases(t *testing.T) []verifyCase {
	t.Helper()
	good := signed(t, f.p, f.in, f.secret)
	tampered := append(append([]byte(nil), f.in.Body...), ' ')
	cs := []verifyCase{
		{name: "accepted", req: good, keys: []string{f.secret}, wantKey: "k0", wantEvent: f.wantEvent},
		{name: "body tampered by one trailing space", req: withBody(good, tampered), keys: []string{f.secret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: good, keys: []string{f.secretNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "missing header", req: withoutHeader(good, f.sigHeader), keys: []string{f.secret}, wantReason: ReasonMissingSignature},
		{name: "empty header", req: withHeader(good, f.sigHeader, ""), keys: []string{f.secret}, wantReason: ReasonMalformedSignature},
		{name: "header name case-insensitive", req: withLowercaseHeader(good, f.sigHeader), keys: []string{f.secret}, wantKey: "k0", wantEvent: f.wantEvent},
		{name: "rotation: old secret still signs, new key listed first", req: good, keys: []string{f.secretNew, f.secret}, wantKey: "k1", wantEvent: f.wantEvent},
		{name: "rotation: first key in order", req: good, keys: []string{f.secret, f.secretNew}, wantKey: "k0", wantEvent: f.wantEvent},
		{name: "rotation: new secret signs", req: signed(t, f.p, f.in, f.secretNew), keys: []string{f.secret, f.secretNew}, wantKey: "k1", wantEvent: f.wantEvent},
	}
	other := f.other
	if other == "" {
		other = "unrelated-secret-value"
	}
	if f.list {
		both := signed(t, f.p, f.in, f.secret, f.secretNew)
		cs = append(cs,
			verifyCase{name: "several signatures: old key matches", req: both, keys: []string{f.secret}, wantKey: "k0", wantEvent: f.wantEvent},
			verifyCase{name: "several signatures: new key matches", req: both, keys: []string{other, f.secretNew}, wantKey: "k1", wantEvent: f.wantEvent},
			verifyCase{name: "several signatures: none matches", req: both, keys: []string{other}, wantReason: ReasonSignatureMismatch},
		)
	}
	for i, v := range f.malformed {
		cs = append(cs, verifyCase{name: "malformed header " + string(rune('a'+i)), req: withHeader(good, f.sigHeader, v), keys: []string{f.secret}, wantReason: ReasonMalformedSignature})
	}
	for i, v := range f.missing {
		cs = append(cs, verifyCase{name: "no signature of ours " + string(rune('a'+i)), req: withHeader(good, f.sigHeader, v), keys: []string{f.secret}, wantReason: ReasonMissingSignature})
	}
	if f.noID != nil {
		cs = append(cs, verifyCase{name: "missing identity", req: f.noID, keys: []string{f.secret}, wantReason: ReasonMissingEventID})
	}
	return cs
}

// withLowercaseHeader returns a copy of req with the named header's name lowercased.
func withLowercaseHeader(req *Request, name string) *Request {
	v := header(req, name)
	out := withoutHeader(req, name)
	out.Headers = append(out.Headers, Header{Name: strings.ToLower(name), Value: v})
	return out
}

// testHMAC is an independent HMAC for expected values: newHash over msg with key.
func testHMAC(newHash func() hash.Hash, key, msg string) []byte {
	m := hmac.New(newHash, []byte(key))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func hmacSHA256Hex(key, msg string) string {
	return hex.EncodeToString(testHMAC(sha256.New, key, msg))
}
func hmacSHA256Base64(key, msg string) string {
	return base64.StdEncoding.EncodeToString(testHMAC(sha256.New, key, msg))
}
func hmacSHA1Hex(key, msg string) string { return hex.EncodeToString(testHMAC(sha1.New, key, msg)) }

// fuzzSignatureHeader drives p.Verify with an arbitrary value of sigHeader (other headers from base),
// and checks that a delivery signed afresh authenticates and never does with one byte of
// sigHeader changed.
func fuzzSignatureHeader(f *testing.F, p *Protocol, secret, sigHeader string, in SignInput, params Params, seeds ...string) {
	keys := keysFor(f, p, secret)
	base := signed(f, p, in, secret)
	f.Add(header(base, sigHeader), in.Body, uint16(1), byte('0'))
	for _, s := range seeds {
		f.Add(s, in.Body, uint16(0), byte(' '))
	}
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		req := withBody(withHeader(base, sigHeader, sig), body)
		_, err := p.Verify(req, keys, params)
		checkAnswer(t, err)
		in := in
		in.Body = body
		fresh := signed(t, p, in, secret)
		checkMutation(t, p, keys, params, fresh, sigHeader, pos, repl)
	})
}

// fixedNowPlus is fixedNow shifted by d, for timestamp cases.
func fixedNowPlus(d time.Duration) time.Time { return fixedNow.Add(d) }
