package protocol

import (
	"strings"
	"testing"
)

func adyenVerifyBody(t *testing.T, body []byte) (Result, error) {
	t.Helper()
	p := Adyen()
	return p.Verify(&Request{Method: "POST", Body: body}, keysFor(t, p, adyenDocsKey), Params{Now: fixedNow})
}

// A JSON boolean success is signed as its text ("false"), like the string form.
func TestAdyenBooleanSuccessFalseVerifies(t *testing.T) {
	t.Parallel()
	item := adyenSignItem(t, `{"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","merchantAccountCode":"M",`+
		`"merchantReference":"r","pspReference":"P1","success":false}`, adyenDocsKey)
	res, err := adyenVerifyBody(t, adyenBody(item))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if want := "P1::M:r:1000:EUR:AUTHORISATION:false"; res.EventID != want {
		t.Fatalf("event id %q, want %q", res.EventID, want)
	}
}

// pspReference+eventCode is Adyen's duplicate key: an item without an eventCode has no identity.
func TestAdyenEmptyEventCodeIsMissingEventID(t *testing.T) {
	t.Parallel()
	item := adyenSignItem(t, `{"amount":{"currency":"EUR","value":1000},"eventCode":"","merchantAccountCode":"M",`+
		`"merchantReference":"r","pspReference":"P1","success":"true"}`, adyenDocsKey)
	res, err := adyenVerifyBody(t, adyenBody(item))
	checkOutcome(t, res, err, ReasonMissingEventID, "", nil)
}

// A single item's signed string is the identity up to 256 bytes inclusive; longer, it is hashed.
func TestAdyenPlainIdentityUpTo256Bytes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{256, 257} {
		ref := strings.Repeat("r", n-len("P1::M:")-len(":1000:EUR:AUTHORISATION:true"))
		item := adyenSignItem(t, `{"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","merchantAccountCode":"M",`+
			`"merchantReference":"`+ref+`","pspReference":"P1","success":"true"}`, adyenDocsKey)
		res, err := adyenVerifyBody(t, adyenBody(item))
		if err != nil {
			t.Fatalf("%d: verify: %v", n, err)
		}
		plain := "P1::M:" + ref + ":1000:EUR:AUTHORISATION:true"
		if len(plain) != n {
			t.Fatalf("signed string is %d bytes, want %d", len(plain), n)
		}
		if hashed := strings.HasPrefix(res.EventID, "items-sha256:"); hashed != (n > adyenMaxPlainID) || (!hashed && res.EventID != plain) {
			t.Fatalf("%d-byte signed string: event id %q", n, res.EventID)
		}
	}
}

// A batch's identity is that of its set of items: the same items in another order are the
// same delivery.
func TestAdyenBatchIdentityIgnoresItemOrder(t *testing.T) {
	t.Parallel()
	a := adyenSignItem(t, `{"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","merchantAccountCode":"M",`+
		`"merchantReference":"r1","pspReference":"P1","success":"true"}`, adyenDocsKey)
	b := adyenSignItem(t, `{"amount":{"currency":"EUR","value":2000},"eventCode":"CAPTURE","merchantAccountCode":"M",`+
		`"merchantReference":"r2","pspReference":"P2","success":"true"}`, adyenDocsKey)
	ab, err := adyenVerifyBody(t, adyenBody(a, b))
	if err != nil {
		t.Fatal(err)
	}
	ba, err := adyenVerifyBody(t, adyenBody(b, a))
	if err != nil {
		t.Fatal(err)
	}
	if ab.EventID != ba.EventID || !strings.HasPrefix(ab.EventID, "items-sha256:") {
		t.Fatalf("event ids %q and %q, want one items-sha256 identity", ab.EventID, ba.EventID)
	}
}
