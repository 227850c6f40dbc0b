package protocol

import "testing"

// Resend deliveries are Svix deliveries: the Svix cases and vector apply unchanged (Resend
// publishes no vector of its own; its SDK's webhooks.verify calls the Svix library).
func TestResendVerify(t *testing.T) {
	t.Parallel()
	runVerifyCases(t, Resend(), svixCases(t, Resend()))
}

func TestResendPublishedVector(t *testing.T) {
	t.Parallel()
	checkSvixVector(t, Resend())
}
