package protocol

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sanity (GROQ-powered webhooks) signs "{t}.{body}", t in Unix milliseconds, with HMAC-SHA256
// keyed with the webhook's secret and sends sanity-webhook-signature: t=<ms>,v1=<base64url>,
// the digest in unpadded base64url. Source: sanity-io/webhook-toolkit src/signature.ts
// (SIGNATURE_HEADER_REGEX /^t=(\d+)[, ]+v1=([^, ]+)$/, createHS256Signature).
const (
	sanityName              = "sanity"
	sanitySignatureHeader   = "sanity-webhook-signature"
	sanityIdempotencyHeader = "idempotency-key"
	sanityDefaultTolerance  = 300 * time.Second
)

// Sanity returns the protocol for Sanity GROQ-powered webhooks.
//
// Verify rejects, in this order: no sanity-webhook-signature (missing signature); a value not of
// the form t=<digits>,v1=<value>, surrounding spaces aside (malformed signature); a v1 that is not 32 bytes of
// unpadded base64url (malformed signature); no key matching (signature mismatch); t more than the
// tolerance from Now in either direction, compared to the millisecond (timestamp out of
// tolerance). The identity is never missing.
func Sanity() *Protocol {
	return &Protocol{
		Name:             sanityName,
		DisplayName:      "Sanity",
		SignatureScheme:  `HMAC-SHA256 (base64url) of "{t}.{body}", t in milliseconds, sanity-webhook-signature t=,v1=`,
		SignsTimestamp:   true,
		DefaultTolerance: sanityDefaultTolerance,
		IdentitySource: `the idempotency-key header when present (not signed; the timestamp window bounds ` +
			`its replay), else sha256 of the raw body ("body-sha256:<hex>"); note that a projection ` +
			`that yields identical bodies for different changes collapses them under the fallback`,
		DocsURL: "https://www.sanity.io/docs/webhooks",
		Retries: "Since April 2026 Sanity retries a delivery that fails with 429 or 5xx twice, 30 s " +
			"apart (before, with backoff over 30 minutes). Whether a retry is signed afresh is not " +
			"documented; 300 s covers both retries even when they reuse the first signature, and " +
			"clock skew.",
		ParseSecret:   sharedSecretParser("Sanity webhook secret"),
		Verify:        verifySanity,
		Sign:          signSanity,
		ExampleSecret: sharedExample(""),
	}
}

// parseSanityHeader splits t=<ms>,v1=<sig>, the form encodeSignatureHeader produces. The toolkit's
// regex also takes spaces or several commas as the separator; that is refused here so that no
// two header strings carry the same signature. Errors are *Rejection.
func parseSanityHeader(v string) (int64, []byte, error) {
	s := strings.Trim(v, " \t")
	rest, ok := strings.CutPrefix(s, "t=")
	if !ok {
		return 0, nil, Reject(ReasonMalformedSignature, "%s does not start with t=", sanitySignatureHeader)
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	ms, ok := parseUnixSeconds(rest[:i]) // the same digit rules, in milliseconds
	if !ok {
		return 0, nil, Reject(ReasonMalformedSignature, "%s t is not decimal milliseconds", sanitySignatureHeader)
	}
	if i == len(rest) || rest[i] != ',' {
		return 0, nil, Reject(ReasonMalformedSignature, "%s has no comma after t", sanitySignatureHeader)
	}
	j := i + 1
	value, ok := strings.CutPrefix(rest[j:], "v1=")
	if !ok || value == "" || strings.ContainsAny(value, ", ") {
		return 0, nil, Reject(ReasonMalformedSignature, "%s has no single v1 after t", sanitySignatureHeader)
	}
	sig, ok := digestBase64URL.decode(value, sha256.Size)
	if !ok {
		return 0, nil, Reject(ReasonMalformedSignature, "%s v1 is not %s", sanitySignatureHeader, digestBase64URL.describe(sha256.Size))
	}
	return ms, sig, nil
}

func verifySanity(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(sanitySignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", sanitySignatureHeader)
	}
	ms, sig, err := parseSanityHeader(raw)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, macMessage(req.Body, strconv.FormatInt(ms, 10), "."))
	if !ok {
		return Result{}, rejectNoMatch(sanitySignatureHeader, 0, keys)
	}
	// Compared to the millisecond: ms/1000 against Now would refuse a delivery up to a second
	// inside the old edge and accept one up to a second beyond the future edge.
	if err := checkTimestampMillisRoundedUp(ms, p.Now, effectiveTolerance(p, sanityDefaultTolerance)); err != nil {
		return Result{}, err
	}
	if id, _ := req.Headers.Get(sanityIdempotencyHeader); id != "" {
		return Result{KeyID: keyID, EventID: id}, nil
	}
	return Result{KeyID: keyID, EventID: bodySHA256ID(req.Body)}, nil
}

// signSanity produces sanity-webhook-signature (and idempotency-key from in.EventID when set).
// A webhook has one secret, so only secrets[0] signs.
func signSanity(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("sanity: sign needs a secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.UnixMilli() < 0 {
		return nil, errors.New("sanity: sign needs a timestamp at or after 1970")
	}
	key, err := sharedSecretParser("Sanity webhook secret")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("sanity: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	h := Headers{{Name: "Content-Type", Value: "application/json"}}
	if in.EventID != "" {
		h = append(h, Header{Name: sanityIdempotencyHeader, Value: in.EventID})
	}
	return append(h, Header{Name: sanitySignatureHeader, Value: "t=" + ts + ",v1=" + digestBase64URL.encode(hmacSum(sha256.New, key, macMessage(in.Body, ts, ".")))}), nil
}
