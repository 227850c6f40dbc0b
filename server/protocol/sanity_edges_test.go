package protocol

import "testing"

// The endpoint's tolerance replaces Sanity's 300 s default in both directions. The toolkit
// (sanity-io/webhook-toolkit) checks no window at all, so the window is hookverify's: a shorter
// one refuses a delivery the default would take, a longer one takes a delivery the default
// would refuse (a retry that reuses its first signature may need it).
func TestSanityEndpointToleranceOverridesDefault(t *testing.T) {
	t.Parallel()
	res := checkEndpointToleranceReplacesDefault(t, Sanity(), sanitySecret, SignInput{Body: []byte(sanityVectorBody), EventID: "msg-tol"})
	if res.EventID != "msg-tol" {
		t.Fatalf("EventID = %q, want the idempotency-key", res.EventID)
	}
}
