package protocol

import (
	"strings"
	"testing"
	"time"
)

// Webflow's docs show a signature and timestamp but not the body or secret behind them, so it
// cannot be replayed. webflowVectorSig was computed independently from the documented
// algorithm: printf '%s' '1700000000000:{"triggerType":"site_publish","payload":{"siteId":"s1"}}' |
// openssl dgst -sha256 -hmac webflow-vector-secret
const (
	webflowSecret      = "webflow-client-secret-one"
	webflowSecret2     = "webflow-client-secret-two"
	webflowVectorKey   = "webflow-vector-secret"
	webflowVectorBody  = `{"triggerType":"site_publish","payload":{"siteId":"s1"}}`
	webflowVectorSig   = "c5d8831ed5fcc5f55b3b58d77f14506b1117b8c0b625d4a4204bd4effe9e34e9"
	webflowVectorMilli = "1700000000000"
)

func webflowRequest(ts, sig, body string) *Request {
	return &Request{Method: "POST", Headers: Headers{{Name: "x-webflow-timestamp", Value: ts}, {Name: "x-webflow-signature", Value: sig}}, Body: []byte(body)}
}

func TestWebflowVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Webflow(), secret: webflowSecret, secret2: webflowSecret2,
		sigHeader: "x-webflow-signature", eventID: "6543c1a4e7b1c5d4f3a2b1c0", wantEventIDFor: bodySHA256ID,
		malformed: []string{"", "zz", strings.ToUpper(webflowVectorSig), "sha256=" + webflowVectorSig, webflowVectorSig[:62]},
	}.run(t)
}

func TestWebflowTimestampHeader(t *testing.T) {
	t.Parallel()
	p := Webflow()
	for _, tc := range []struct {
		name, ts   string
		wantReason Reason
	}{
		{name: "vector", ts: webflowVectorMilli},
		{name: "seconds instead of milliseconds is stale", ts: "1700000000", wantReason: ReasonSignatureMismatch},
		{name: "not a number", ts: "1700000000000ms", wantReason: ReasonMalformedSignature},
		{name: "negative", ts: "-1700000000000", wantReason: ReasonMalformedSignature},
		{name: "empty", ts: "", wantReason: ReasonMalformedSignature},
		{name: "leading zero signs the same number", ts: "01700000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := webflowRequest(tc.ts, webflowVectorSig, webflowVectorBody)
			res, err := p.Verify(req, keysFor(t, p, webflowVectorKey), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
		})
	}
	req := withoutHeader(webflowRequest(webflowVectorMilli, webflowVectorSig, webflowVectorBody), "x-webflow-timestamp")
	res, err := p.Verify(req, keysFor(t, p, webflowVectorKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingTimestamp, "", req)
}

func TestWebflowRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Webflow()
	req := webflowRequest(webflowVectorMilli, webflowVectorSig, webflowVectorBody)
	res, err := p.Verify(req, keysFor(t, p, webflowVectorKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(webflowVectorBody)) || !strings.HasPrefix(res.EventID, "body-sha256:") {
		t.Fatalf("EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(webflowVectorBody), Timestamp: fixedNow}, []string{webflowVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("x-webflow-signature"); got != webflowVectorSig {
		t.Fatalf("Sign = %q, want %q", got, webflowVectorSig)
	}
	if got, _ := h.Get("x-webflow-timestamp"); got != webflowVectorMilli {
		t.Fatalf("timestamp = %q", got)
	}
	checkSecretsRefused(t, p, "", "\twebflow")
}

func FuzzWebflowSignatureHeader(f *testing.F) {
	f.Add(webflowVectorSig, []byte(webflowVectorBody), uint16(9), byte('A'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Webflow(), webflowVectorKey, "x-webflow-signature", Headers{{Name: "x-webflow-timestamp", Value: webflowVectorMilli}}, sig, body, pos, repl, fixedNow, "")
	})
}

func FuzzWebflowTimestampHeader(f *testing.F) {
	f.Add(webflowVectorMilli, uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, ts string, pos uint16, repl byte) {
		p := Webflow()
		keys := keysFor(t, p, webflowVectorKey)
		_, err := p.Verify(webflowRequest(ts, webflowVectorSig, webflowVectorBody), keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		req := webflowRequest(webflowVectorMilli, webflowVectorSig, webflowVectorBody)
		checkMutation(t, p, keys, Params{Now: fixedNow}, req, "x-webflow-timestamp", pos, repl)
	})
}

// ecomm_inventory_changed and collection_item_unpublished name only the object and its new
// state: a SKU back at a quantity it had, or an item unpublished a second time, is sent as the
// same bytes. Two such sends must be two events; a replay of one signed send stays one, and
// a trigger type whose body names its event keeps the body's hash across retries.
func TestWebflowRepeatingBodiesAreDistinctEvents(t *testing.T) {
	t.Parallel()
	p := Webflow()
	keys := keysFor(t, p, webflowSecret)
	idAt := func(body string, at time.Time) string {
		return eventIDOf(t, p, keys, signed(t, p, SignInput{Body: []byte(body), Timestamp: at}, webflowSecret), fixedNow)
	}
	first, later := fixedNow.Add(-2*time.Minute), fixedNow.Add(-30*time.Second)
	for _, body := range []string{
		`{"triggerType":"ecomm_inventory_changed","payload":{"id":"5bfedb42bab0ad90fa7dad39","quantity":100,"inventoryType":"finite"}}`,
		`{"triggerType":"collection_item_unpublished","payload":{"id":"66424365e972c886137a1cf1","siteId":"65427cf400e02b306eaa049c","workspaceId":"625860a7a6c16d624927122f","collectionId":"664243617fcc8b464b23c4ee"}}`,
	} {
		a, b := idAt(body, first), idAt(body, later)
		if a == b {
			t.Errorf("two sends of %s share the identity %q: the later event would be lost as a duplicate", body, a)
		}
		if again := idAt(body, first); again != a {
			t.Errorf("a replay of one signed send has identity %q, first %q", again, a)
		}
		if want := bodySHA256ID([]byte(body)) + "@" + "1699999880000"; a != want {
			t.Errorf("EventID = %q, want %q", a, want)
		}
	}
	form := string(webflowExampleBody("6543c1a4e7b1c5d4f3a2b1c0"))
	if a, b := idAt(form, first), idAt(form, later); a != b || a != bodySHA256ID([]byte(form)) {
		t.Errorf("a form_submission retry has identities %q and %q, want the body hash for both", a, b)
	}
}
