package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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

// Fuzz targets for parsers of untrusted bytes that had none of their own: the low-level
// signature decoders (every provider's header goes through them), the JSON pointer of the
// option-configured protocols (pointer from an admin caller, body from the provider) and every
// protocol's ParseSecret (secrets come from admin callers). Each is held to a reference or a
// round trip, not only to not panicking.

// refPointerLookup is an independent RFC 6901 evaluation over encoding/json's decoding: a body
// json.Valid refuses, or a pointer that is not "" or "/..." with '~' only as ~0/~1, is an error.
func refPointerLookup(body []byte, ptr string) (any, bool, bool) {
	if !json.Valid(body) {
		return nil, false, false
	}
	var tokens []string
	if ptr != "" {
		if ptr[0] != '/' {
			return nil, false, false
		}
		for _, tok := range strings.Split(ptr[1:], "/") {
			if strings.Count(tok, "~") != strings.Count(tok, "~0")+strings.Count(tok, "~1") {
				return nil, false, false
			}
			tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var cur any
	if dec.Decode(&cur) != nil {
		return nil, false, false
	}
	for _, tok := range tokens {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false, true
			}
			cur = v
		case []any:
			if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.Trim(tok, "0123456789") != "" {
				return nil, false, true
			}
			n, err := strconv.Atoi(tok)
			if err != nil || n >= len(node) {
				return nil, false, true
			}
			cur = node[n]
		default:
			return nil, false, true
		}
	}
	return cur, true, true
}

// FuzzGenericPointerLookup holds genericPointerLookup to refPointerLookup: same error/found
// answer and the same value.
func FuzzGenericPointerLookup(f *testing.F) {
	for _, c := range []struct{ body, ptr string }{
		{`{"id":"evt_1"}`, "/id"},
		{`{"data":{"items":[{"id":7}]}}`, "/data/items/0/id"},
		{`{"a/b":{"m~n":"x"}}`, "/a~1b/m~0n"},
		{`{"id":"a"}x`, "/id"},
		{`{"id":"a"}}`, "/id"},
		{`[1,2,3]`, "/01"},
		{`{"":{"":1}}`, "//"},
		{`{"id":"a"} `, "/id"},
		{`{"id":"a"}{"id":"b"}`, "/id"},
	} {
		f.Add([]byte(c.body), c.ptr)
	}
	f.Fuzz(func(t *testing.T, body []byte, ptr string) {
		got, found, err := genericPointerLookup(body, ptr)
		want, wantFound, wantOK := refPointerLookup(body, ptr)
		if (err == nil) != wantOK {
			t.Fatalf("genericPointerLookup(%q, %q) error = %v, reference ok = %v", body, ptr, err, wantOK)
		}
		if err != nil {
			return
		}
		if found != wantFound || !reflect.DeepEqual(got, want) {
			t.Fatalf("genericPointerLookup(%q, %q) = %#v, %v; reference %#v, %v", body, ptr, got, found, want, wantFound)
		}
	})
}

// FuzzDigestDecode holds each digest encoding's decoder to the standard library and to
// uniqueness: what decodes re-encodes to exactly the input, so no two header strings carry the
// same signature.
func FuzzDigestDecode(f *testing.F) {
	for _, s := range []string{
		strings.Repeat("ab", 32), strings.Repeat("AB", 32), strings.Repeat("0", 40),
		"7S2+kN8bZsrdAEADJ+yYfWWsf/4=", "7S2+kN8bZsrdAEADJ+yYfWWsf/5=", "7S2+kN8bZsrdAEADJ+yYfWWsf/4",
		"tLa470fx7qkLLEcMOcEUFuBbRSkGujyskxrNXcoh0N0", "tLa470fx7qkLLEcMOcEUFuBbRSkGujyskxrNXcoh0N1",
		"7S2+kN8bZsrdAEADJ+yY\nfWWsf/4=",
	} {
		f.Add(s, uint8(20))
		f.Add(s, uint8(32))
	}
	f.Fuzz(func(t *testing.T, s string, size uint8) {
		n := int(size%70) + 1
		for _, e := range []digestEncoding{digestHex, digestBase64, digestBase64URL} {
			got, ok := e.decode(s, n)
			var ref []byte
			var err error
			switch e {
			case digestHex:
				if strings.ToLower(s) != s {
					err = strconv.ErrSyntax
				} else {
					ref, err = hex.DecodeString(s)
				}
			case digestBase64:
				ref, err = base64.StdEncoding.Strict().DecodeString(s)
			case digestBase64URL:
				ref, err = base64.RawURLEncoding.Strict().DecodeString(s)
			}
			// The standard decoders skip CR and LF; a header carrying them is not canonical.
			wantOK := err == nil && len(ref) == n && !strings.ContainsAny(s, "\r\n")
			if ok != wantOK || (ok && !bytes.Equal(got, ref)) {
				t.Fatalf("%v.decode(%q, %d) = %x, %v; reference %x, %v", e, s, n, got, ok, ref, wantOK)
			}
			if ok && e.encode(got) != s {
				t.Fatalf("%v.decode(%q, %d) accepted a non-canonical form (canonical %q)", e, s, n, e.encode(got))
			}
		}
	})
}

// FuzzParseUnixSeconds holds parseUnixSeconds to its contract: 1 to 19 ASCII digits that fit
// an int64, and the value strconv gives them.
func FuzzParseUnixSeconds(f *testing.F) {
	for _, s := range []string{"1700000000", "0", "", "-1", "+1", " 1", "1e9", "9223372036854775807", "9223372036854775808", "0000000000000000001", "00000000000000000001", "١٢"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseUnixSeconds(s)
		ref, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil && len(s) >= 1 && len(s) <= 19 && strings.Trim(s, "0123456789") == ""
		if ok != wantOK || (ok && v != ref) {
			t.Fatalf("parseUnixSeconds(%q) = %d, %v; want %d, %v", s, v, ok, ref, wantOK)
		}
	})
}

// FuzzEveryProtocolParseSecret: secrets arrive from admin callers (AddSecret, the CLI) and are
// parsed by each protocol's ParseSecret. Properties, for every protocol:
//   - any string gets key material or an error, never a panic, the same answer twice;
//   - an error never quotes the secret (checked with a marker spliced into it: whatever the
//     parser says of the rest, the marker must not come back);
//   - accepted material is non-empty (an empty HMAC key is public knowledge);
//   - for a protocol whose signing and verifying secrets are the same string, a delivery its
//     Sign makes with an accepted secret authenticates under the parsed key.
func FuzzEveryProtocolParseSecret(f *testing.F) {
	protocols := Builtin()
	symmetric := make([]bool, len(protocols)) // the signing secret is the verifying one
	for i, p := range protocols {
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			f.Fatalf("%s: ExampleSecret: %v", p.Name, err)
		}
		symmetric[i] = signing == verifying
		f.Add(uint8(i), verifying, uint16(len(verifying)/2))
		f.Add(uint8(i), " "+signing+"\n", uint16(0))
	}
	f.Add(uint8(0), "", uint16(0))
	f.Add(uint8(1), "\xff\xfe", uint16(1))
	const marker = "Zq7XmarkerK3w"
	f.Fuzz(func(t *testing.T, which uint8, secret string, pos uint16) {
		n := int(which) % len(protocols)
		p := protocols[n]
		m1, err1 := p.ParseSecret(secret)
		m2, err2 := p.ParseSecret(secret)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(m1, m2) {
			t.Fatalf("%s: ParseSecret is not deterministic: %x, %v then %x, %v", p.Name, m1, err1, m2, err2)
		}
		i := int(pos) % (len(secret) + 1)
		marked := secret[:i] + marker + secret[i:]
		if _, err := p.ParseSecret(marked); err != nil && strings.Contains(err.Error(), marker) {
			t.Fatalf("%s: ParseSecret error quotes the secret: %v", p.Name, err)
		}
		if err1 != nil {
			return
		}
		if len(m1) == 0 {
			t.Fatalf("%s: ParseSecret(%q) accepted with empty key material", p.Name, secret)
		}
		if !symmetric[n] {
			return // asymmetric (or a differing credential form): the signing secret is another string
		}
		body := ExampleBody(p, "evt_fuzz_1")
		in := SignInput{Body: body, EventID: "evt_fuzz_1", Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in"}
		d, err := SignDelivery(p, in, []string{secret})
		if err != nil {
			return // Sign may refuse what ParseSecret takes only when it cannot carry it
		}
		req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
		_, err = p.Verify(req, []Key{{ID: "k0", Material: m1}}, Params{Now: fixedNow})
		if err != nil && signatureStage(ReasonOf(err)) {
			t.Fatalf("%s: a delivery signed with secret %q does not authenticate under its parsed key: %v", p.Name, secret, err)
		}
	})
}

// TestGenericPointerTrailingData: a body that is one JSON value followed by anything but white
// space is not JSON (RFC 8259, json.Valid); the id_pointer identity must call it malformed
// rather than read the event id from its first value. The option-configured protocols share
// the lookup; generic-hmac (signed body) and bearer-token (unsigned body) show it.
func TestGenericPointerTrailingData(t *testing.T) {
	t.Parallel()
	opts := map[string]string{"id_pointer": "/id"}
	for _, body := range []string{`{"id":"a"}x`, `{"id":"a"}}`, `{"id":"a"}]`, `{"id":"a"} ,`} {
		for _, p := range []*Protocol{GenericHMAC(), BearerToken()} {
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			d, err := SignDelivery(p, SignInput{Body: []byte(body), Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in", Options: opts}, []string{signing})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
			res, err := p.Verify(req, keysFor(t, p, verifying), Params{Now: fixedNow, Options: p.DigestCredentialOptions(opts)})
			checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
		}
	}
	// White space after the value is still JSON.
	if v, found, err := genericPointerLookup([]byte("{\"id\":\"a\"} \r\n\t"), "/id"); err != nil || !found || v != "a" {
		t.Fatalf("trailing white space: %v, %v, %v", v, found, err)
	}
}
