package protocol

import (
	"testing"
	"time"
)

// ecomm_inventory_changed and collection_item_unpublished name only the object and its new
// state: a SKU back at a quantity it had, or an item unpublished a second time, is sent as the
// same bytes. Two such sends must be two events; a replay of one signed send stays one, and
// a trigger type whose body names its event keeps the body's hash across retries.
func TestWebflowRepeatingBodiesAreDistinctEvents(t *testing.T) {
	t.Parallel()
	p := Webflow()
	keys := keysFor(t, p, webflowSecret)
	idAt := func(body string, at time.Time) string {
		t.Helper()
		h, err := p.Sign(SignInput{Body: []byte(body), Timestamp: at}, []string{webflowSecret})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Verify(&Request{Method: "POST", Headers: h, Body: []byte(body)}, keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		return res.EventID
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
