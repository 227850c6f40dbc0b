package protocol

import (
	"testing"
)

// shopifyEventIDOnly is a Shopify delivery of body, signed, in which X-Shopify-Event-Id alone
// names the event (no X-Shopify-Webhook-Id), with its topic in topicHeader (none when empty).
func shopifyEventIDOnly(t *testing.T, body, topicHeader, topic string) *Request {
	t.Helper()
	req := signed(t, Shopify(), SignInput{Body: []byte(body), EventID: "unused", Timestamp: fixedNow}, shopifySecret)
	req = withoutHeader(req, "X-Shopify-Webhook-Id")
	req = withoutHeader(req, "X-Shopify-Topic")
	req = withHeader(req, "X-Shopify-Event-Id", shopifyEventID)
	if topicHeader != "" {
		req = withHeader(req, topicHeader, topic)
	}
	return req
}

// TestShopifyEventIDFallbackReadsShopifyTopic: the Event-Id fallback takes the topic from
// X-Shopify-Topic or, as the Shopify Events headers are named, Shopify-Topic. With only the
// latter, two topics of one action (often with the same body) must still stay apart; read as
// "no topic", they fell back to the body's hash and were merged.
// TestShopifyEventIDFallbackKeepsTopicsApart sends X-Shopify-Topic only.
func TestShopifyEventIDFallbackReadsShopifyTopic(t *testing.T) {
	t.Parallel()
	p := Shopify()
	keys := keysFor(t, p, shopifySecret)
	delivery := func(topic string) *Request { return shopifyEventIDOnly(t, shopifyBody, "Shopify-Topic", topic) }
	id := func(req *Request) string { return eventIDOf(t, p, keys, req, fixedNow) }
	created, updated := id(delivery("orders/create")), id(delivery("orders/updated"))
	if created == updated {
		t.Errorf("with Shopify-Topic, orders/create and orders/updated of one action share the identity %q", created)
	}
	if again := id(delivery("orders/create")); again != created {
		t.Errorf("a repeat of one topic got %q, want %q", again, created)
	}
}

// TestShopifyEventIDFallbackWithoutATopic: without any topic header, the Event-Id is qualified
// by the body's hash (IdentitySource: "<event id>:body-sha256:<hex>"): two different bodies
// under one Event-Id are two events, the same body twice one.
func TestShopifyEventIDFallbackWithoutATopic(t *testing.T) {
	t.Parallel()
	p := Shopify()
	keys := keysFor(t, p, shopifySecret)
	delivery := func(body string) *Request { return shopifyEventIDOnly(t, body, "", "") }
	id := func(req *Request) string { return eventIDOf(t, p, keys, req, fixedNow) }
	a, b := id(delivery(`{"id":1,"topic":"orders/create"}`)), id(delivery(`{"id":1,"topic":"orders/updated"}`))
	if a == b {
		t.Errorf("two bodies under one Event-Id and no topic share the identity %q", a)
	}
	if again := id(delivery(`{"id":1,"topic":"orders/create"}`)); again != a {
		t.Errorf("the same delivery twice got %q and %q", a, again)
	}
}

// TestShopifyEventIDFallbackKeepsObjectsApart: one merchant action on many objects (a bulk edit
// of orders) may fire one topic for each under one X-Shopify-Event-Id; keyed on the Event-Id
// and topic alone, every order after the first was a duplicate and lost. The body's hash keeps
// them apart, and a retry, which resends the original payload, stays one event.
func TestShopifyEventIDFallbackKeepsObjectsApart(t *testing.T) {
	t.Parallel()
	p := Shopify()
	keys := keysFor(t, p, shopifySecret)
	id := func(body string) string {
		return eventIDOf(t, p, keys, shopifyEventIDOnly(t, body, "X-Shopify-Topic", "orders/updated"), fixedNow)
	}
	first, second := id(`{"id":1,"note":"bulk"}`), id(`{"id":2,"note":"bulk"}`)
	if first == second {
		t.Errorf("orders/updated of two orders under one Event-Id share the identity %q: the second would be lost", first)
	}
	if again := id(`{"id":1,"note":"bulk"}`); again != first {
		t.Errorf("a retry of one order got %q, then %q", first, again)
	}
}
