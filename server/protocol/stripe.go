package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...][,v0=<hex>]; v1 is HMAC-SHA256 of "{t}.{body}"
// keyed with the whole whsec_ string. Stripe sends one v1 per active secret while a rotated
// secret is still valid; test-mode deliveries add a v0, which is not for us.
const (
	stripeName             = "stripe"
	stripeSignatureHeader  = "Stripe-Signature"
	stripeScheme           = "v1"
	stripeDefaultTolerance = 300 * time.Second
)

// Stripe returns the protocol for Stripe webhook endpoints.
//
// Verify rejects, in this order: no Stripe-Signature header (missing signature); a header that
// does not parse — empty, an element without exactly one '=', no t or a repeated t, t not
// decimal seconds (malformed signature); no v1 element at all, only other schemes such as v0
// (missing signature); no v1 matching any key (malformed signature if some v1 was not 64
// lowercase hex digits, else signature mismatch); t more than the tolerance away from Now in
// either direction — stricter than stripe-go, which accepts future timestamps (timestamp out of
// tolerance); a body that is not a JSON object (malformed payload); no non-empty string "id" at
// the top level of the body (missing event id).
func Stripe() *Protocol {
	return &Protocol{
		Name:             stripeName,
		DisplayName:      "Stripe",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{t}.{body}", Stripe-Signature v1`,
		SignsTimestamp:   true,
		DefaultTolerance: stripeDefaultTolerance,
		IdentitySource:   `body JSON field "id" (evt_...)`,
		DocsURL:          "https://docs.stripe.com/webhooks#verify-manually",
		Retries:          "Stripe resends undelivered events with exponential backoff for up to 3 days. Every attempt is signed afresh with a new t=, so the 300s tolerance is measured from each attempt's own signing time and late retries are not stale; the event id stays the same, so they are duplicates.",
		ParseSecret:      parseStripeSecret,
		Verify:           verifyStripe,
		Sign:             signStripe,
		ExampleSecret:    exampleStripeSecret,
	}
}

// parseStripeSecret keeps the whsec_ string as the key bytes: Stripe does not decode it.
func parseStripeSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the Stripe signing secret is empty")
	}
	if strings.TrimSpace(secret) != secret {
		return nil, invalidSecret("the Stripe signing secret has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// stripeHeader is a parsed Stripe-Signature value.
type stripeHeader struct {
	timestamp int64
	// signatures are the well-formed v1 signatures, in header order.
	signatures [][]byte
	// malformed counts v1 elements that are not 32 bytes of lowercase hex.
	malformed int
	// others counts elements of other schemes (v0 and anything unknown).
	others int
}

// parseStripeHeader parses a Stripe-Signature value. Its errors are *Rejection.
func parseStripeHeader(v string) (stripeHeader, error) {
	var h stripeHeader
	if v == "" {
		return h, Reject(ReasonMalformedSignature, "Stripe-Signature is empty")
	}
	seenT := false
	for _, part := range strings.Split(v, ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok || key == "" || strings.Contains(value, "=") {
			return h, Reject(ReasonMalformedSignature, "Stripe-Signature has an element that is not key=value")
		}
		switch key {
		case "t":
			if seenT {
				return h, Reject(ReasonMalformedSignature, "Stripe-Signature has more than one t")
			}
			seenT = true
			ts, ok := parseUnixSeconds(value)
			if !ok {
				return h, Reject(ReasonMalformedSignature, "Stripe-Signature t is not unix seconds")
			}
			h.timestamp = ts
		case stripeScheme:
			sig, ok := decodeLowerHex(value, sha256.Size)
			if !ok {
				h.malformed++
				continue
			}
			h.signatures = append(h.signatures, sig)
		default:
			h.others++
		}
	}
	if !seenT {
		return h, Reject(ReasonMalformedSignature, "Stripe-Signature has no t timestamp")
	}
	if len(h.signatures) == 0 && h.malformed == 0 {
		return h, Reject(ReasonMissingSignature,
			"Stripe-Signature has no v1 signature (%d element(s) of other schemes such as v0 are ignored)", h.others)
	}
	return h, nil
}

func verifyStripe(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(stripeSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no Stripe-Signature header")
	}
	h, err := parseStripeHeader(raw)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, h.signatures, sha256.New, stripeMessage(h.timestamp, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(stripeSignatureHeader, h.malformed, keys)
	}
	if err := checkTimestamp(h.timestamp, p.Now, effectiveTolerance(p, stripeDefaultTolerance)); err != nil {
		return Result{}, err
	}
	id, err := stripeEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// stripeMessage writes "{t}.{body}" without copying the body.
func stripeMessage(ts int64, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		var buf [24]byte
		mac.Write(strconv.AppendInt(buf[:0], ts, 10))
		mac.Write([]byte{'.'})
		mac.Write(body)
	}
}

// stripeEventID returns the top-level "id" of a Stripe event body; the key match is exact.
func stripeEventID(body []byte) (string, error) { return jsonBodyString(body, "id") }

// signStripe produces the Stripe-Signature header Stripe would send: one t and one v1 per
// secret, in the order given (Stripe signs with every unexpired secret). It does not add the
// v0 that test-mode deliveries carry. The event id is the body's "id"; in.EventID is unused.
func signStripe(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("stripe: sign needs at least one secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("stripe: sign needs a timestamp at or after 1970")
	}
	ts := in.Timestamp.Unix()
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(ts, 10))
	for i, s := range secrets {
		key, err := parseStripeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("stripe: secret %d: %w", i, err)
		}
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(hmacSum(sha256.New, key, stripeMessage(ts, in.Body))))
	}
	return Headers{{Name: stripeSignatureHeader, Value: b.String()}}, nil
}
