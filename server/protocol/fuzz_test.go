package protocol

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fuzz targets drive each signature-header parser through Verify. Properties:
//   - any header value is answered with an acceptance or a *Rejection, never a panic or
//     another error;
//   - a delivery we signed authenticates, and the same delivery with any single byte of its
//     signature header replaced never gets past the signature check (so it is never accepted).
//
// Seed corpora live in testdata/fuzz/<FuzzName>/.

// signatureStage reports whether r is a rejection decided at or before the signature check.
func signatureStage(r Reason) bool {
	switch r {
	case ReasonMissingSignature, ReasonMalformedSignature, ReasonSignatureMismatch:
		return true
	}
	return false
}

// checkAnswer fails unless err is nil or a *Rejection.
func checkAnswer(t *testing.T, err error) {
	t.Helper()
	if err != nil && ReasonOf(err) == 0 {
		t.Fatalf("Verify returned a non-rejection error: %v", err)
	}
}

// mutateHeader returns req with byte pos (modulo its length) of the named header, which our
// own signing produced, replaced by repl, and that byte's index; changed is false when the
// byte already was repl.
func mutateHeader(t *testing.T, req *Request, name string, pos uint16, repl byte) (mutated *Request, i int, changed bool) {
	t.Helper()
	orig := header(req, name)
	if len(orig) == 0 {
		t.Fatalf("Sign produced no %s", name)
	}
	i = int(pos) % len(orig)
	if orig[i] == repl {
		return req, i, false
	}
	b := []byte(orig)
	b[i] = repl
	return withHeader(req, name, string(b)), i, true
}

// checkHeaderMutationRejected replaces byte pos of the named (signed) header of a delivery we
// signed and checks the result is rejected. Unlike checkMutation it allows rejections before
// the signature check, such as a timestamp that no longer parses.
func checkHeaderMutationRejected(t *testing.T, p *Protocol, keys []Key, params Params, req *Request, name string, pos uint16, repl byte) {
	t.Helper()
	mreq, i, changed := mutateHeader(t, req, name, pos, repl)
	if !changed {
		return
	}
	res, err := p.Verify(mreq, keys, params)
	if err == nil {
		t.Fatalf("accepted with %s byte %d changed to %q: %+v", name, i, repl, res)
	}
	checkAnswer(t, err)
}

// checkMutation signs req's body afresh (via sign), checks it authenticates, then replaces
// byte pos of the named header with repl and checks it no longer does.
func checkMutation(t *testing.T, p *Protocol, keys []Key, params Params, req *Request, name string, pos uint16, repl byte) {
	t.Helper()
	_, err := p.Verify(req, keys, params)
	if err != nil && signatureStage(ReasonOf(err)) {
		t.Fatalf("our own signature does not authenticate: %v", err)
	}
	mreq, i, changed := mutateHeader(t, req, name, pos, repl)
	if !changed {
		return
	}
	res, err := p.Verify(mreq, keys, params)
	if err == nil {
		t.Fatalf("accepted with %s byte %d changed to %q: %+v", name, i, repl, res)
	}
	if !signatureStage(ReasonOf(err)) {
		t.Fatalf("authenticated with %s byte %d changed to %q: %v", name, i, repl, err)
	}
}

func FuzzStripeSignatureHeader(f *testing.F) {
	p := Stripe()
	keys := keysFor(f, p, stripeSecret)
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	f.Add(stripeHeaderAt(fixedNow.Unix(), stripeBody, stripeSecret), []byte(stripeBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(&Request{Headers: Headers{{Name: "Stripe-Signature", Value: sig}}, Body: body}, keys, params)
		checkAnswer(t, err)
		_, err = parseStripeHeader(sig)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, stripeSecret)
		checkMutation(t, p, keys, params, req, "Stripe-Signature", pos, repl)
	})
}

func FuzzGitHubSignatureHeader(f *testing.F) {
	p := GitHub()
	keys := keysFor(f, p, githubSecret)
	f.Add("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", []byte("Hello, World!"), uint16(0), byte('S'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		for _, name := range []string{"X-Hub-Signature-256", "X-Hub-Signature"} {
			_, err := p.Verify(&Request{Headers: Headers{{Name: name, Value: sig}, {Name: "X-GitHub-Delivery", Value: githubDelivery}}, Body: body}, keys, Params{})
			checkAnswer(t, err)
		}
		// Sign also sends a valid legacy SHA-1 header: mutating the SHA-256 one must not
		// fall back to it.
		req := signed(t, p, SignInput{Body: body, EventID: githubDelivery}, githubSecret)
		checkMutation(t, p, keys, Params{}, req, "X-Hub-Signature-256", pos, repl)
		legacyOnly := withoutHeader(req, "X-Hub-Signature-256")
		checkMutation(t, p, keys, Params{}, legacyOnly, "X-Hub-Signature", pos, repl)
	})
}

func FuzzStandardWebhooksSignatureHeader(f *testing.F) {
	p := StandardWebhooks()
	keys := keysFor(f, p, swSecret)
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	f.Add(swEntry(f, swSecret, swID, fixedNow.Unix(), swBody), ts, []byte(swBody), uint16(1), byte(' '))
	f.Fuzz(func(t *testing.T, sig, timestamp string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(swRequest(swID, timestamp, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = parseStandardWebhooksSignature("webhook-signature", sig)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, EventID: swID, Timestamp: fixedNow}, swSecret)
		checkMutation(t, p, keys, params, req, "webhook-signature", pos, repl)
	})
}

// fuzzProtocol is a built-in protocol with the signing half of an example secret and keys
// made from its verifying half.
type fuzzProtocol struct {
	p       *Protocol
	signing string
	keys    []Key
}

// newFuzzProtocols returns every built-in protocol as a fuzzProtocol, built once per fuzz
// process.
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
		if _, err := verifyTwice(t, fp, req, stored); signatureStage(ReasonOf(err)) {
			t.Fatalf("%s with options %q: its own signature does not authenticate: %v", p.Name, opts, err)
		}
	})
}
