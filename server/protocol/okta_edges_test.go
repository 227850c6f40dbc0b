package protocol

import (
	"strings"
	"testing"
)

// Okta's documented duplicate check compares data.events[].uuid: a delivery that lists one
// event twice holds one distinct event, so its identity is that uuid, the same as a delivery
// of the event once (IdentitySource: "the uuid itself when the delivery holds one distinct
// event").
func TestOktaRepeatedUUIDInOneDeliveryIsOneEvent(t *testing.T) {
	t.Parallel()
	p := Okta()
	keys := keysFor(t, p, oktaSecret)
	const uuid = "4d6f5e5a-c5a1-11ea-8e5a-5d2c7e3b5f44"
	twice := strings.Replace(oktaBody, `"severity":"INFO"}]`, `"severity":"INFO"},{"uuid":"`+uuid+`"}]`, 1)
	if twice == oktaBody {
		t.Fatal("test body not built")
	}
	once := eventIDOf(t, p, keys, oktaRequest(oktaSecret, oktaBody), fixedNow)
	got := eventIDOf(t, p, keys, oktaRequest(oktaSecret, twice), fixedNow)
	if once != uuid || got != uuid {
		t.Fatalf("EventID once = %q, twice = %q, want %q for both", once, got, uuid)
	}
}

// An event whose "uuid" is the empty string names no event: the delivery is rejected (missing
// event id) rather than claimed under the empty identity.
func TestOktaEmptyUUIDIsMissingEventID(t *testing.T) {
	t.Parallel()
	p := Okta()
	keys := keysFor(t, p, oktaSecret)
	req := oktaRequest(oktaSecret, `{"data":{"events":[{"uuid":"","eventType":"user.session.start"}]}}`)
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingEventID, "", req)
}
