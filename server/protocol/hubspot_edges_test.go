package protocol

import "testing"

// A request forwarded without its method is verified as POST, the method HubSpot sends
// webhooks with and the default of its SDKs' Signature.isValid/getSignature (method "POST"
// unless given): the signature HubSpot computed over "POST" + URI + body + timestamp matches.
func TestHubSpotV3WithoutMethodIsVerifiedAsPost(t *testing.T) {
	t.Parallel()
	p := HubSpot()
	keys := keysFor(t, p, hubspotSecret)
	req := hubspotSignedV3(hubspotDocsBody, hubspotNowMs, hubspotSecret)
	req.Method = ""
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != hubspotDocsID {
		t.Fatalf("EventID = %q, want %q", res.EventID, hubspotDocsID)
	}
}

// A batch's identity is made of its events' keys sorted, so it does not depend on the order
// the events come in (HubSpot documents no order within a batch; a retry may rebuild it).
func TestHubSpotBatchIdentityIgnoresEventOrder(t *testing.T) {
	t.Parallel()
	p := HubSpot()
	keys := keysFor(t, p, hubspotSecret)
	a := `{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,"attemptNumber":0}`
	b := `{"eventId":2,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600001,"attemptNumber":0}`
	ab := eventIDOf(t, p, keys, hubspotSignedV3("["+a+","+b+"]", hubspotNowMs, hubspotSecret), fixedNow)
	ba := eventIDOf(t, p, keys, hubspotSignedV3("["+b+","+a+"]", hubspotNowMs, hubspotSecret), fixedNow)
	if ab != ba {
		t.Fatalf("the same two events in two orders: %q and %q", ab, ba)
	}
}
