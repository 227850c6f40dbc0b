package protocol

import (
	"strconv"
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
