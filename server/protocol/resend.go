package protocol

// Resend returns the protocol for Resend webhooks. Resend delivers through Svix: its
// resend.webhooks.verify takes the svix-id, svix-timestamp and svix-signature headers and the
// whsec_ signing secret of the webhook. Verification is StandardWebhooks'.
func Resend() *Protocol {
	return svixProvider("resend", "Resend",
		"https://resend.com/docs/webhooks/verify-webhooks-requests",
		"Resend webhooks are sent by Svix, so Svix's schedule applies: "+svixRetries)
}
