package protocol

import "testing"

// Resend deliveries are Svix deliveries: the Svix cases and vector apply unchanged (Resend
// publishes no vector of its own; its SDK's webhooks.verify calls the Svix library).
func TestResendVerify(t *testing.T) {
	t.Parallel()
	batchARun(t, Resend(), batchASvixCases(t, Resend()))
}

func TestResendPublishedVector(t *testing.T) {
	t.Parallel()
	batchASvixVector(t, Resend())
}
