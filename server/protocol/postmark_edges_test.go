package protocol

import (
	"strings"
	"testing"
)

// An identity longer than 400 bytes (here an inbound message whose MessageID is 500
// characters) falls back to the body hash.
func TestPostmarkOverlongIdentityFallsBackToBodyHash(t *testing.T) {
	t.Parallel()
	p := Postmark()
	body := `{"MessageID":"` + strings.Repeat("m", 500) + `","From":"a@example.com"}`
	req := basicReq(basicOf(postmarkSecret), body)
	res, err := p.Verify(req, keysFor(t, p, postmarkSecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if want := bodySHA256ID([]byte(body)); res.EventID != want {
		t.Fatalf("EventID = %q, want %q", res.EventID, want)
	}
}
