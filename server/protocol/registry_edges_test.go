package protocol

import "testing"

// NewRegistry refuses a protocol name that is not lowercase (endpoints name providers in
// lowercase, so it could never be looked up) and a name registered twice (the second would
// silently replace the first).
func TestNewRegistryRefusesUppercaseAndDuplicateNames(t *testing.T) {
	t.Parallel()
	upper := Stripe()
	upper.Name = "Stripe"
	if _, err := NewRegistry(upper); err == nil {
		t.Error("NewRegistry accepted the name \"Stripe\"")
	}
	if _, err := NewRegistry(Stripe(), GitHub(), Stripe()); err == nil {
		t.Error("NewRegistry accepted stripe registered twice")
	}
	r, err := NewRegistry(Stripe(), GitHub())
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := r.Lookup("stripe"); !ok || p.Name != "stripe" {
		t.Errorf("Lookup(stripe) = %v, %v", p, ok)
	}
}
