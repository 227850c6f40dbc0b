package protocol

// Clerk returns the protocol for Clerk webhooks. Clerk delivers through Svix: the signing
// secret shown in the Clerk dashboard is a whsec_ Svix secret and the headers are svix-id,
// svix-timestamp and svix-signature (@clerk/backend's verifyWebhook maps them onto the
// Standard Webhooks library). Verification is StandardWebhooks'.
func Clerk() *Protocol {
	return svixProvider("clerk", "Clerk",
		"https://clerk.com/docs/webhooks/sync-data",
		"Clerk webhooks are sent by Svix, so Svix's schedule applies: "+svixRetries)
}
