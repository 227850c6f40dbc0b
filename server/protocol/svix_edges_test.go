package protocol

import (
	"strings"
	"testing"
)

// Svix and the providers delivering through it describe themselves, as the admin API shows
// them, with their own identity (svix-id), signature header, docs page and Svix's retry
// schedule, not with the Standard Webhooks description they are built from.
func TestSvixProvidersDescribeThemselves(t *testing.T) {
	t.Parallel()
	for _, p := range []*Protocol{Svix(), Clerk(), Resend()} {
		if !strings.HasPrefix(p.IdentitySource, "svix-id header") {
			t.Errorf("%s: IdentitySource = %q, want it to name the svix-id header first", p.Name, p.IdentitySource)
		}
		if !strings.Contains(p.SignatureScheme, "svix-signature") {
			t.Errorf("%s: SignatureScheme = %q, want it to name svix-signature", p.Name, p.SignatureScheme)
		}
		if !strings.HasSuffix(p.Retries, svixRetries) {
			t.Errorf("%s: Retries = %q, want Svix's schedule", p.Name, p.Retries)
		}
		if p.DocsURL == StandardWebhooks().DocsURL {
			t.Errorf("%s: DocsURL is the Standard Webhooks spec's, want the provider's page", p.Name)
		}
	}
}
