package protocol

import (
	"testing"
	"time"
)

// A webhook connected to a trigger or automation sends the body the admin wrote
// (developer.zendesk.com/documentation/webhooks/anatomy-of-a-webhook-request), often with the
// ticket's id under "id". Only an event-subscription body (type "zen:event-type:...") has the
// event's own id at top level (developer.zendesk.com/api-reference/webhooks/event-types/
// webhook-event-types: "id" of the event, the ticket or user is in detail). Without the
// invocation header, two trigger deliveries about one ticket must not share an identity.
func TestZendeskReviewTriggerBodyIDIsNotTheEventID(t *testing.T) {
	t.Parallel()
	p := Zendesk()
	ts := fixedNow.UTC().Format(time.RFC3339)
	keys := keysFor(t, p, zdSecret)
	verify := func(body string) string {
		t.Helper()
		req := withoutHeader(zdReq(zdSig(zdSecret, ts, body), ts, body), zendeskInvocationHeader)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatalf("verify %s: %v", body, err)
		}
		return res.EventID
	}
	opened := verify(`{"id":"35436","status":"open"}`)
	solved := verify(`{"id":"35436","status":"solved"}`)
	if opened == solved {
		t.Fatalf("two trigger deliveries about ticket 35436 share the identity %q: the second would be taken for a duplicate", opened)
	}
	if want := bodySHA256ID([]byte(`{"id":"35436","status":"open"}`)); opened != want {
		t.Fatalf("trigger body identity = %q, want the body hash %q", opened, want)
	}
	// An event-subscription body still names its event.
	if got := verify(zdBody); got != "cbe4028c-7239-495d-b020-f22348516046" {
		t.Fatalf("event-subscription identity = %q, want the event id", got)
	}
}
