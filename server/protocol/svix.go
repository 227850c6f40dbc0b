package protocol

// Svix returns the protocol for endpoints receiving from Svix (https://www.svix.com), the
// hosted sender behind many providers' webhooks. The scheme is Standard Webhooks with svix-*
// header names; verification, its rejection order and the secret format are exactly
// StandardWebhooks' (see there), and Sign sends svix-id, svix-timestamp and svix-signature.
func Svix() *Protocol {
	return batchASvix("svix", "Svix",
		"https://docs.svix.com/receiving/verifying-payloads/how-manual",
		batchASvixRetries)
}
