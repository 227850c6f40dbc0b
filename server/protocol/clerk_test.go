package protocol

import "testing"

// Clerk deliveries are Svix deliveries: the Svix cases and vector apply unchanged (Clerk
// publishes no vector of its own; @clerk/backend verifies with the Standard Webhooks library).
func TestClerkVerify(t *testing.T) {
	t.Parallel()
	runVerifyCases(t, Clerk(), svixCases(t, Clerk()))
}

func TestClerkPublishedVector(t *testing.T) {
	t.Parallel()
	checkSvixVector(t, Clerk())
}
