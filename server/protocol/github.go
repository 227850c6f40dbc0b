package protocol

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
)

// GitHub signs the raw request body — JSON or application/x-www-form-urlencoded alike, never
// a decoded form field — with HMAC-SHA256 in X-Hub-Signature-256 ("sha256=<hex>"), and with
// HMAC-SHA1 in the legacy X-Hub-Signature ("sha1=<hex>"). There is no timestamp; the delivery
// GUID in X-GitHub-Delivery is the identity and stays the same on redelivery.
const (
	githubName            = "github"
	githubSignature256    = "X-Hub-Signature-256"
	githubSignatureLegacy = "X-Hub-Signature"
	githubDeliveryHeader  = "X-GitHub-Delivery"
)

// githubScheme is one GitHub signature header and the HMAC it carries.
type githubScheme struct {
	header  string
	prefix  string // "sha256" in "sha256=<hex>"
	newHash func() hash.Hash
	size    int
}

// githubSchemes lists the signature headers in order of preference. The SHA-1 header is read
// only when the SHA-256 one is absent or empty, as go-github does, because older GitHub
// Enterprise Server releases send only it. That fallback is safe: HMAC-SHA1 is not broken as a
// MAC (SHA-1's collision attacks do not let anyone forge an HMAC without the key), and a
// delivery that carries a SHA-256 signature is judged by it alone, so no downgrade is possible.
var githubSchemes = [...]githubScheme{
	{header: githubSignature256, prefix: "sha256", newHash: sha256.New, size: sha256.Size},
	{header: githubSignatureLegacy, prefix: "sha1", newHash: sha1.New, size: sha1.Size},
}

// GitHub returns the protocol for GitHub repository, organization and app webhooks.
//
// Verify rejects, in this order: neither X-Hub-Signature-256 nor X-Hub-Signature present
// (missing signature); the chosen header empty, without '=', or its hex not lowercase of the
// right length (malformed signature); a prefix other than sha256= (sha1= in the legacy header)
// (missing signature: unknown scheme); no key matching (signature mismatch); no or empty
// X-GitHub-Delivery (missing event id). Unlike go-github, an empty key or signature never
// authenticates. Nothing is timed: GitHub signs no timestamp.
func GitHub() *Protocol {
	return &Protocol{
		Name:            githubName,
		DisplayName:     "GitHub",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Hub-Signature-256 (SHA-1 X-Hub-Signature fallback)",
		SignsTimestamp:  false,
		IdentitySource:  "X-GitHub-Delivery header",
		DocsURL:         "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
		Retries:         "GitHub does not retry failed deliveries by itself; a redelivery requested from the UI or the API keeps the X-GitHub-Delivery id. No timestamp is signed, so any delay is accepted, and the delivery id makes redeliveries duplicates.",
		ParseSecret:     parseGitHubSecret,
		Verify:          verifyGitHub,
		Sign:            signGitHub,
		ExampleSecret:   exampleGitHubSecret,
	}
}

// parseGitHubSecret keeps the secret's bytes: GitHub uses the string you typed as the key.
func parseGitHubSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the GitHub webhook secret is empty")
	}
	return []byte(secret), nil
}

// parseGitHubSignature decodes one "prefix=<hex>" value for scheme s. Its errors are *Rejection.
func parseGitHubSignature(s githubScheme, v string) ([]byte, error) {
	if v == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is empty", s.header)
	}
	prefix, digest, ok := cutByte(v, '=')
	if !ok {
		return nil, Reject(ReasonMalformedSignature, "%s is not %s=<hex>", s.header, s.prefix)
	}
	if prefix != s.prefix {
		return nil, Reject(ReasonMissingSignature, "%s uses an unsupported scheme (want %s=)", s.header, s.prefix)
	}
	sig, ok := decodeLowerHex(digest, s.size)
	if !ok {
		return nil, Reject(ReasonMalformedSignature, "%s is not %d lowercase hex digits", s.header, 2*s.size)
	}
	return sig, nil
}

// cutByte is strings.Cut for a single byte.
func cutByte(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func verifyGitHub(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	scheme, value, err := chooseGitHubSignature(req.Headers)
	if err != nil {
		return Result{}, err
	}
	sig, err := parseGitHubSignature(scheme, value)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, scheme.newHash, func(mac hash.Hash) { mac.Write(req.Body) })
	if !ok {
		return Result{}, rejectNoMatch(scheme.header, 0, keys)
	}
	id, _ := req.Headers.Get(githubDeliveryHeader)
	if id == "" {
		return Result{}, Reject(ReasonMissingEventID, "no %s header", githubDeliveryHeader)
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// chooseGitHubSignature picks the first non-empty signature header in preference order. When
// a header is present but every present one is empty, the first present one is returned so
// that parsing reports it as malformed.
func chooseGitHubSignature(h Headers) (githubScheme, string, error) {
	firstPresent := -1
	for i, s := range githubSchemes {
		v, ok := h.Get(s.header)
		if !ok {
			continue
		}
		if v != "" {
			return s, v, nil
		}
		if firstPresent < 0 {
			firstPresent = i
		}
	}
	if firstPresent >= 0 {
		return githubSchemes[firstPresent], "", nil
	}
	return githubScheme{}, "", Reject(ReasonMissingSignature, "no %s or %s header", githubSignature256, githubSignatureLegacy)
}

// signGitHub produces the headers GitHub sends: X-GitHub-Delivery, the legacy SHA-1 signature
// and the SHA-256 one. GitHub has a single secret per webhook, so only secrets[0] signs; the
// rest are ignored. X-GitHub-Event is omitted: SignInput carries no event type.
func signGitHub(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("github: sign needs a secret")
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("github: %w for X-GitHub-Delivery", ErrSignNeedsEventID)
	}
	key, err := parseGitHubSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	body := func(mac hash.Hash) { mac.Write(in.Body) }
	return Headers{
		{Name: githubDeliveryHeader, Value: in.EventID},
		{Name: githubSignatureLegacy, Value: "sha1=" + hex.EncodeToString(hmacSum(sha1.New, key, body))},
		{Name: githubSignature256, Value: "sha256=" + hex.EncodeToString(hmacSum(sha256.New, key, body))},
	}, nil
}
