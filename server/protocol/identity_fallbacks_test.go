package protocol

import (
	"strings"
	"testing"
	"time"
)

// TestGitLabEventUUIDRecursiveDeliveriesStayDistinct: GitLab documents X-Gitlab-Event-UUID as
// "Unique ID per webhook that is not recursive. A hook is recursive if triggered by an earlier
// webhook that hit the GitLab instance. Recursive webhooks have the same value for this header"
// (gitlab doc/user/project/integrations/webhooks.md, delivery headers; the value is the request
// UUID recycled by lib/gitlab/web_hooks/recursion_detection/uuid.rb from the X-Gitlab-Event-UUID
// of the API request). A receiver that answers a webhook by calling GitLab's API (commenting,
// closing the issue) with that header passed on makes GitLab send the note and issue events to
// the same hook under that one UUID. Keyed on the UUID alone, the second is answered DUPLICATE
// and lost. Distinct events must get distinct identities, while the same
// delivery sent twice stays one event.
func TestGitLabEventUUIDRecursiveDeliveriesStayDistinct(t *testing.T) {
	t.Parallel()
	p := GitLab()
	keys := keysFor(t, p, gitlabToken)
	params := Params{Now: time.Unix(1767000000, 0)}
	const uuid = "13792a34-cac6-4fda-95a8-c58e00a3954e"
	deliver := func(event, body string) Result {
		t.Helper()
		req := &Request{Method: "POST", Body: []byte(body), Headers: Headers{
			{Name: "X-Gitlab-Event", Value: event},
			{Name: "X-Gitlab-Token", Value: gitlabToken},
			{Name: "X-Gitlab-Event-UUID", Value: uuid},
		}}
		res, err := p.Verify(req, keys, params)
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		return res
	}
	note := deliver("Note Hook", `{"object_kind":"note","object_attributes":{"id":1244,"note":"On it"}}`)
	issue := deliver("Issue Hook", `{"object_kind":"issue","object_attributes":{"iid":23,"action":"close"}}`)
	if note.EventID == issue.EventID {
		t.Errorf("two distinct events under one recursive X-Gitlab-Event-UUID share the identity %q: the second would be dropped as a duplicate", note.EventID)
	}
	again := deliver("Note Hook", `{"object_kind":"note","object_attributes":{"id":1244,"note":"On it"}}`)
	if again.EventID != note.EventID {
		t.Errorf("the same delivery twice got identities %q and %q", note.EventID, again.EventID)
	}
	if !strings.Contains(note.EventID, uuid) {
		t.Errorf("identity %q does not name the X-Gitlab-Event-UUID it came from", note.EventID)
	}
}

// TestShopifyEventIDFallbackKeepsTopicsApart: X-Shopify-Event-Id is "a unique ID shared across
// all deliveries produced by the same merchant action" (Shopify's delivery-structure page, as
// quoted in shopify.go), so one action that fires orders/create and orders/updated sends both
// under one Event-Id, often with byte-identical bodies. When a delivery carries no
// X-Shopify-Webhook-Id the identity falls back to the Event-Id, and keyed on it alone the second
// topic is answered DUPLICATE and lost. The fallback must keep topics apart, while a repeat of
// one topic under its Event-Id (a retry, or a second subscription to that topic at this URL)
// stays a duplicate, as Shopify's ignore-duplicates page asks.
func TestShopifyEventIDFallbackKeepsTopicsApart(t *testing.T) {
	t.Parallel()
	p := Shopify()
	keys := keysFor(t, p, shopifySecret)
	delivery := func(topic string) *Request { return shopifyEventIDOnly(t, shopifyBody, "X-Shopify-Topic", topic) }
	id := func(req *Request) string { return eventIDOf(t, p, keys, req, fixedNow) }
	created := id(delivery("orders/create"))
	updated := id(delivery("orders/updated"))
	if created == updated {
		t.Errorf("without X-Shopify-Webhook-Id, orders/create and orders/updated of one action share the identity %q: the second would be lost as a duplicate", created)
	}
	if again := id(delivery("orders/create")); again != created {
		t.Errorf("a repeat of one topic got %q, want %q", again, created)
	}
	if !strings.Contains(created, shopifyEventID) {
		t.Errorf("identity %q does not name the X-Shopify-Event-Id", created)
	}
}
