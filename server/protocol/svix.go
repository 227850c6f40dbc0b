package protocol

import (
	"fmt"
	"strings"
)

// Svix returns the protocol for endpoints receiving from Svix (https://www.svix.com), the
// hosted sender behind many providers' webhooks. The scheme is Standard Webhooks with svix-*
// header names; verification, its rejection order and the secret format are StandardWebhooks'
// (see there), except that the svix-* headers are read before the webhook-* ones (as a set
// whose three headers are all there and non-empty, as the Svix libraries read them), and Sign
// sends svix-id, svix-timestamp and svix-signature.
func Svix() *Protocol {
	return svixProvider("svix", "Svix",
		"https://docs.svix.com/receiving/verifying-payloads/how-manual",
		svixRetries)
}

// svixProvider returns the Standard Webhooks protocol re-described for a provider that delivers
// through Svix: verification is StandardWebhooks' own with the header families in the Svix
// libraries' order and way (the svix-* set when its three headers are non-empty, else the
// webhook-* set), and Sign sends the svix-* names Svix uses
// unless an account has white-labelled them.
func svixProvider(name, display, docs, retries string) *Protocol {
	p := StandardWebhooks()
	p.Name = name
	p.DisplayName = display
	p.SignatureScheme = `HMAC-SHA256 (base64) of "{svix-id}.{svix-timestamp}.{body}", svix-signature v1 (Svix)`
	p.IdentitySource = "svix-id header (webhook-id when white-labelled, or when the svix-* set is incomplete), the same on every retry"
	p.DocsURL = docs
	p.Retries = retries
	p.Verify = func(req *Request, keys []Key, params Params) (Result, error) {
		return verifyStandardWebhooksFamilies(req, keys, params, svixFamilies, true)
	}
	sign := p.Sign
	p.Sign = func(in SignInput, secrets []string) (Headers, error) {
		h, err := sign(in, secrets)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out := make(Headers, len(h))
		for i, f := range h {
			out[i] = Header{Name: "svix-" + strings.TrimPrefix(f.Name, "webhook-"), Value: f.Value}
		}
		return out, nil
	}
	return p
}

// svixRetries is Svix's documented retry behaviour, shared by the providers using it.
const svixRetries = "Svix retries a failed attempt (non-2xx, or no answer within 15 s) " +
	"immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h " +
	"(https://docs.svix.com/retries); every attempt is signed afresh with the time it is sent, " +
	"so svix-timestamp is never older than the attempt and the 300 s tolerance of the Svix " +
	"libraries (both directions) only has to absorb clock skew. svix-id stays the same on " +
	"every retry and on manual resends, so duplicates are recognised."
