package protocol

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzProtocols is every built-in protocol with a verifying key made from an example secret,
// built once per fuzz process.
type fuzzProtocol struct {
	p       *Protocol
	signing string
	keys    []Key
}

func newFuzzProtocols(f *testing.F) []fuzzProtocol {
	var out []fuzzProtocol
	for _, p := range Builtin() {
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			f.Fatalf("%s: ExampleSecret: %v", p.Name, err)
		}
		out = append(out, fuzzProtocol{p: p, signing: signing, keys: keysFor(f, p, verifying)})
	}
	return out
}

// checkVerdict fails unless err is nil or a *Rejection with a reason and a detail, and a
// rejection comes with no result.
func checkVerdict(t *testing.T, name string, res Result, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var rej *Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("%s: Verify returned a non-rejection error: %v", name, err)
	}
	if rej.Reason == 0 || strings.TrimSpace(rej.Detail) == "" {
		t.Fatalf("%s: rejection without a reason or detail: %#v", name, rej)
	}
	if !reflect.DeepEqual(res, Result{}) {
		t.Fatalf("%s: rejection %v came with a result %+v", name, err, res)
	}
}

// cloneRequest deep-copies req, so a second Verify sees the same bytes even if the first one
// had (wrongly) modified its input.
func cloneRequest(req *Request) *Request {
	out := *req
	out.Headers = append(Headers(nil), req.Headers...)
	out.Body = append([]byte(nil), req.Body...)
	return &out
}

func sameRequest(a, b *Request) bool {
	return a.Method == b.Method && a.URL == b.URL && bytes.Equal(a.Body, b.Body) &&
		len(a.Headers) == len(b.Headers) && (len(a.Headers) == 0 || reflect.DeepEqual(a.Headers, b.Headers))
}

// verifyTwice verifies req twice, checks the verdict's shape and that the two verdicts agree
// (the identity of an accepted delivery is a function of the delivery), and returns it.
func verifyTwice(t *testing.T, fp fuzzProtocol, req *Request, params Params) (Result, error) {
	t.Helper()
	before := cloneRequest(req)
	res, err := fp.p.Verify(req, fp.keys, params)
	checkVerdict(t, fp.p.Name, res, err)
	if !sameRequest(req, before) {
		t.Fatalf("%s: Verify modified the request", fp.p.Name)
	}
	res2, err2 := fp.p.Verify(cloneRequest(before), fp.keys, params)
	if !reflect.DeepEqual(res, res2) || ReasonOf(err) != ReasonOf(err2) || (err == nil) != (err2 == nil) {
		t.Fatalf("%s: the same delivery verified twice gave %+v, %v and %+v, %v", fp.p.Name, res, err, res2, err2)
	}
	if err == nil && res.Handshake == nil {
		if res.EventID == "" {
			t.Fatalf("%s: accepted without an event identity", fp.p.Name)
		}
		if res.KeyID == "" {
			t.Fatalf("%s: accepted a delivery without naming the key that authenticated it", fp.p.Name)
		}
	}
	return res, err
}

// FuzzEveryProtocolVerify drives every protocol's parsers past the signature check: the
// per-protocol targets mostly fuzz a signature header around a fixed event id, so the parsers
// that run only on an authenticated delivery (the event identity in a header or a JSON/form
// field, the URL, the method) see fuzzed input here, inside a delivery signed afresh by the
// protocol's own Sign. Properties, for each protocol:
//   - any delivery, signed or not, is answered with an acceptance or a *Rejection with a reason
//     and a detail, never a panic or another error, and Verify leaves the request unchanged;
//   - the verdict and the identity of an accepted delivery are a function of the delivery;
//   - an accepted non-handshake delivery names its key and has an event identity;
//   - the delivery with one more header (any name, any value) or another method gets a verdict
//     of the same shape;
//   - endpoint options the protocol's ValidateOptions accepts give an endpoint that
//     authenticates deliveries its Sign makes for them (options stored digested, as the server
//     stores them).
func FuzzEveryProtocolVerify(f *testing.F) {
	protocols := newFuzzProtocols(f)
	// One valid delivery per protocol, so each one's accepting paths are in the corpus.
	for i, fp := range protocols {
		f.Add(uint8(i), ExampleBody(fp.p, "evt_seed_1"), "evt_seed_1", "POST", "https://hooks.example.com/in?x=1", "X-Extra", "v", "", "")
	}
	f.Add(uint8(0), []byte(`{"id":"evt_1","type":"x"}`), "evt_1", "POST", "https://hooks.example.com/in?x=1", "X-Extra", "v", "", "")
	f.Add(uint8(3), []byte("type=subscribe&data%5Bid%5D=1"), "a b", "GET", "https://hooks.example.com/in", "Content-Type", "application/x-www-form-urlencoded", "query_param", "tok")
	f.Add(uint8(30), []byte(`{"event":{"id":"\u0000"}}`), "\xff\x00", "post", "http://[::1]:80/%zz?a=%", "", "\x00", "header", "X-Token")
	f.Add(uint8(60), []byte(`[{"id":1}]`), strings.Repeat("e", 300), "HEAD", "/relative?secret=a&secret=b", "x-hub-signature-256", "sha256=00", "verify_token", "t")
	f.Add(uint8(67), []byte(`{"type":"url_verification","challenge":"c"}`), "", "", "", "Webhook-Id", "msg_1", "template", "{timestamp}.{body}")
	f.Fuzz(func(t *testing.T, which uint8, body []byte, eventID, method, url, extraName, extraValue, optKey, optValue string) {
		fp := protocols[int(which)%len(protocols)]
		p := fp.p
		now := fixedNow
		params := Params{Now: now, Tolerance: 5 * time.Minute}

		// Unsigned: the parsers that run before authentication.
		unsigned := &Request{Method: method, URL: url, Headers: Headers{{Name: extraName, Value: extraValue}}, Body: body}
		verifyTwice(t, fp, unsigned, params)

		// Signed afresh with fuzzed body, event id and URL.
		if url == "" {
			url = "https://hooks.example.com/in"
		}
		in := SignInput{Body: body, EventID: eventID, Timestamp: now, Method: "POST", URL: url}
		d, err := SignDelivery(p, in, []string{fp.signing})
		if err == nil {
			req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
			if _, err := verifyTwice(t, fp, req, params); signatureStage(ReasonOf(err)) {
				t.Fatalf("%s: its own signature does not authenticate: %v", p.Name, err)
			}

			extra := cloneRequest(req)
			extra.Headers = append(extra.Headers, Header{Name: extraName, Value: extraValue})
			verifyTwice(t, fp, extra, params)

			if len(req.Headers) > 0 {
				// The same name as one of the signed headers, repeated with another value.
				dup := cloneRequest(req)
				h := req.Headers[len(body)%len(req.Headers)]
				dup.Headers = append(dup.Headers, Header{Name: h.Name, Value: extraValue})
				verifyTwice(t, fp, dup, params)
				first := cloneRequest(req)
				first.Headers = append(Headers{{Name: h.Name, Value: extraValue}}, first.Headers...)
				verifyTwice(t, fp, first, params)
			}

			other := cloneRequest(req)
			other.Method = method
			verifyTwice(t, fp, other, params)
		}

		// Options: what validates must work.
		if p.ValidateOptions == nil || optKey == "" {
			return
		}
		opts := map[string]string{optKey: optValue}
		if p.ValidateOptions(opts) != nil {
			return
		}
		in.Options = opts
		d, err = SignDelivery(p, in, []string{fp.signing})
		if err != nil {
			return // the options do not let Sign make this delivery (e.g. a body its template cannot carry)
		}
		req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
		stored := Params{Now: now, Tolerance: params.Tolerance, Options: p.DigestCredentialOptions(opts)}
		res, err := verifyTwice(t, fp, req, stored)
		if signatureStage(ReasonOf(err)) {
			t.Fatalf("%s with options %q: its own signature does not authenticate: %v", p.Name, opts, err)
		}
		_ = res
	})
}
