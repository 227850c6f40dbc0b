package protocol

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fixedNow is the verifier clock of the deterministic tests.
var fixedNow = time.Unix(1_700_000_000, 0)

// keysFor parses secrets with p into keys named k0, k1, ...
func keysFor(t testing.TB, p *Protocol, secrets ...string) []Key {
	t.Helper()
	keys := make([]Key, len(secrets))
	for i, s := range secrets {
		m, err := p.ParseSecret(s)
		if err != nil {
			t.Fatalf("ParseSecret(secret %d): %v", i, err)
		}
		keys[i] = Key{ID: fmt.Sprintf("k%d", i), Material: m}
	}
	return keys
}

// signedHeader returns the named header of p.Sign(in, secret).
func signedHeader(t *testing.T, p *Protocol, in SignInput, secret, name string) string {
	t.Helper()
	h, err := p.Sign(in, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := h.Get(name)
	return v
}

// signed returns a request carrying body and the headers p.Sign produces.
func signed(t testing.TB, p *Protocol, in SignInput, secrets ...string) *Request {
	t.Helper()
	h, err := p.Sign(in, secrets)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return &Request{Method: "POST", URL: "https://hooks.example.com/x", Headers: h, Body: in.Body}
}

// withHeader returns a copy of req with the named header set to value (added if absent).
func withHeader(req *Request, name, value string) *Request {
	out := *req
	out.Headers = append(Headers(nil), req.Headers...)
	for i := range out.Headers {
		if strings.EqualFold(out.Headers[i].Name, name) {
			out.Headers[i].Value = value
			return &out
		}
	}
	out.Headers = append(out.Headers, Header{Name: name, Value: value})
	return &out
}

// withoutHeader returns a copy of req without the named header.
func withoutHeader(req *Request, name string) *Request {
	out := *req
	out.Headers = nil
	for _, h := range req.Headers {
		if !strings.EqualFold(h.Name, name) {
			out.Headers = append(out.Headers, h)
		}
	}
	return &out
}

// withBody returns a copy of req with another body.
func withBody(req *Request, body []byte) *Request {
	out := *req
	out.Body = body
	return &out
}

func header(req *Request, name string) string {
	v, _ := req.Headers.Get(name)
	return v
}

// eventIDOf verifies req at now and returns its event identity, failing the test if it is
// rejected: for tests that compare the identities of related deliveries.
func eventIDOf(t testing.TB, p *Protocol, keys []Key, req *Request, now time.Time) string {
	t.Helper()
	res, err := p.Verify(req, keys, Params{Now: now})
	if err != nil {
		t.Fatalf("Verify(%s %s): %v", req.Method, req.URL, err)
	}
	return res.EventID
}

// checkOutcome asserts an acceptance with wantKey (when wantReason is 0) or a rejection with
// wantReason, and that rejections are *Rejection with a detail that leaks nothing of req.
func checkOutcome(t *testing.T, res Result, err error, wantReason Reason, wantKey string, req *Request) {
	t.Helper()
	if wantReason == 0 {
		if err != nil {
			t.Fatalf("want accepted, got %v", err)
		}
		if res.KeyID != wantKey {
			t.Fatalf("KeyID = %q, want %q", res.KeyID, wantKey)
		}
		return
	}
	if err == nil {
		t.Fatalf("want %v, got accepted (%+v)", wantReason, res)
	}
	var rej *Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("error %v (%T) is not a *Rejection", err, err)
	}
	if rej.Reason != wantReason {
		t.Fatalf("reason = %v (%q), want %v", rej.Reason, rej.Detail, wantReason)
	}
	if !errors.Is(err, &Rejection{Reason: wantReason}) {
		t.Fatalf("errors.Is does not match reason %v", wantReason)
	}
	if res != (Result{}) {
		t.Fatalf("rejection came with a result %+v", res)
	}
	assertNoLeak(t, rej.Detail, req)
}

// assertNoLeak fails when detail quotes a signature-bearing header value or the body.
func assertNoLeak(t *testing.T, detail string, req *Request) {
	t.Helper()
	if req == nil {
		return
	}
	for _, h := range req.Headers {
		for _, field := range strings.FieldsFunc(h.Value, func(r rune) bool { return r == ',' || r == ' ' || r == '=' }) {
			if len(field) >= 16 && strings.Contains(detail, field) {
				t.Fatalf("detail %q quotes header %s", detail, h.Name)
			}
		}
	}
	if len(req.Body) >= 8 && strings.Contains(detail, string(req.Body)) {
		t.Fatalf("detail %q quotes the body", detail)
	}
}

// exampleKeys returns p's example signing secret and its verifying counterpart as the one key
// "k1", as Verify takes it.
func exampleKeys(tb testing.TB, p *Protocol) (signing string, keys []Key) {
	tb.Helper()
	signing, verifying, err := p.ExampleSecret()
	if err != nil {
		tb.Fatal(err)
	}
	material, err := p.ParseSecret(verifying)
	if err != nil {
		tb.Fatal(err)
	}
	return signing, []Key{{ID: "k1", Material: material}}
}

// checkDefaultToleranceIncludesItsBound checks a protocol's window without an endpoint
// tolerance: a delivery signed exactly tol away, either way, is accepted; one second more is
// out of tolerance. in is signed as given, its Timestamp set for each case.
func checkDefaultToleranceIncludesItsBound(t *testing.T, p *Protocol, secret string, in SignInput, tol time.Duration) {
	t.Helper()
	keys := keysFor(t, p, secret)
	for _, tc := range []struct {
		offset     time.Duration
		wantReason Reason
	}{
		{offset: -tol},
		{offset: tol},
		{offset: -tol - time.Second, wantReason: ReasonTimestampOutOfTolerance},
		{offset: tol + time.Second, wantReason: ReasonTimestampOutOfTolerance},
	} {
		in.Timestamp = fixedNow.Add(tc.offset)
		req := signed(t, p, in, secret)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, tc.wantReason, "k0", req)
	}
}

// checkEndpointToleranceReplacesDefault checks that an endpoint's tolerance replaces a 300 s
// default both ways: 30 s refuses a delivery signed a minute ago, which the default would take;
// an hour takes one signed 20 minutes ago, which the default would refuse. It returns the
// result of the latter.
func checkEndpointToleranceReplacesDefault(t *testing.T, p *Protocol, secret string, in SignInput) Result {
	t.Helper()
	keys := keysFor(t, p, secret)
	in.Timestamp = fixedNow.Add(-time.Minute)
	old := signed(t, p, in, secret)
	res, err := p.Verify(old, keys, Params{Now: fixedNow, Tolerance: 30 * time.Second})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", old)
	in.Timestamp = fixedNow.Add(-20 * time.Minute)
	older := signed(t, p, in, secret)
	res, err = p.Verify(older, keys, Params{Now: fixedNow, Tolerance: time.Hour})
	checkOutcome(t, res, err, 0, "k0", older)
	return res
}
