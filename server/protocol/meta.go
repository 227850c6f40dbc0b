package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
)

// Meta (Graph API webhooks: Messenger, Instagram, WhatsApp Business, Pages, ...):
// X-Hub-Signature-256 is "sha256=<hex>", the HMAC-SHA256 of the raw payload keyed with the
// app secret (fbsamples/messenger-platform-samples; developers.facebook.com/docs/graph-api/
// webhooks/getting-started). Subscribing sends an unsigned GET with hub.mode=subscribe,
// hub.verify_token (the token you typed in the App Dashboard) and hub.challenge, which must
// be echoed. Notifications carry no delivery id.
const (
	metaName             = "meta"
	metaVerifyTokenOpt   = "verify_token"
	metaSignatureHeader  = "X-Hub-Signature-256"
	metaModeSubscribe    = "subscribe"
	metaMaxVerifyTokenSz = 1024
)

var metaProvider = bodyMACProvider{
	name: metaName,
	scheme: bodyMACScheme{
		headers: []string{metaSignatureHeader},
		version: "sha256",
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Meta app secret"),
	identity: bodyHashIdentity,
}

// Meta returns the protocol for Meta webhooks.
//
// A GET is the verification request: it needs hub.mode=subscribe, a hub.challenge and a
// hub.verify_token matching the endpoint's verify_token option (stored as a salted digest,
// compared in constant time); it is answered 200 with the challenge echoed (text/plain,
// nosniff). A GET without hub.mode
// or hub.verify_token is rejected as missing signature, one with another mode, or with a
// token while the endpoint has none configured or a different one, as signature mismatch, one
// without a challenge as malformed payload. Any other method is a notification, and Verify
// rejects, in this order: no X-Hub-Signature-256 (missing signature); an empty value, no '=',
// or hex that is not 64 lowercase digits (malformed signature); a prefix other than sha256=
// (missing signature); no key matching (signature mismatch). The legacy SHA-1 X-Hub-Signature
// Meta also sends is not read. The identity is the body's SHA-256, so it never fails.
func Meta() *Protocol {
	return &Protocol{
		Name:            metaName,
		DisplayName:     "Meta (Facebook, Instagram, WhatsApp)",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Hub-Signature-256 sha256=; GET hub.challenge echo checked against verify_token",
		IdentitySource: "none sent by Meta; fallback: " + bodyHashPrefix + "<hex SHA-256 of the raw body> " +
			"(a batch of entry[] changes; a retry resends the same bytes)",
		DocsURL: "https://developers.facebook.com/docs/graph-api/webhooks/getting-started",
		Retries: "Meta retries a notification that gets no 200 immediately a few times, then with " +
			"decreasing frequency for up to 36 hours before dropping it, and asks receivers to " +
			"deduplicate (Graph API webhooks docs; the schedule is not published). Only the body " +
			"is signed, no timestamp, so a late retry verifies, and the unchanged body dedupes " +
			"by its hash.",
		ParseSecret:       metaProvider.secret,
		ValidateOptions:   validateMetaOptions,
		CredentialOptions: []string{metaVerifyTokenOpt},
		Verify:            verifyMeta,
		Sign:              metaProvider.sign,
		ExampleSecret:     exampleSecret("", 16, hex.EncodeToString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"object":"page","entry":[{"id":` + jsonQuote(eventID) + `,"time":1767000000,"changes":[{"field":"feed","value":{"item":"status","verb":"add"}}]}]}`)
		},
	}
}

// validateMetaOptions allows only verify_token, which must be non-empty when given: the token
// itself, or the digest a stored endpoint shows for it (see credential_option.go). It is
// optional: without it, the verification GET is refused, but notifications verify.
func validateMetaOptions(options map[string]string) error {
	for k, v := range options {
		switch {
		case k != metaVerifyTokenOpt:
			return errors.New("meta: unknown option " + k + " (only verify_token is accepted)")
		case v == "":
			return errors.New("meta: verify_token must not be empty")
		case len(v) > metaMaxVerifyTokenSz:
			return errors.New("meta: verify_token is longer than 1024 bytes")
		case looksLikeCredentialDigest(v) && !isCredentialDigest(v):
			return errors.New("meta: verify_token starts like a stored digest (" + credentialDigestPrefix + ") but is not one; send the token itself or the digest unchanged")
		}
	}
	return nil
}

func verifyMeta(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil || req.Method != http.MethodGet {
		return metaProvider.verify(req, keys, p)
	}
	q, err := requestQuery(req.URL)
	if err != nil {
		return Result{}, err
	}
	mode, token := q.Get("hub.mode"), q.Get("hub.verify_token")
	if mode == "" || token == "" {
		return Result{}, Reject(ReasonMissingSignature, "a GET without hub.mode and hub.verify_token is not a verification request")
	}
	if mode != metaModeSubscribe {
		return Result{}, rejectWithoutKeys(ReasonSignatureMismatch, "hub.mode is not subscribe")
	}
	want := p.Options[metaVerifyTokenOpt]
	if want == "" {
		return Result{}, rejectWithoutKeys(ReasonSignatureMismatch, "the endpoint has no verify_token option to check hub.verify_token against")
	}
	if !credentialMatches(want, token) {
		return Result{}, rejectWithoutKeys(ReasonSignatureMismatch, "hub.verify_token does not match the endpoint's verify_token")
	}
	challenge := q.Get("hub.challenge")
	if challenge == "" {
		return Result{}, Reject(ReasonMalformedPayload, "the verification request has no hub.challenge")
	}
	return Result{Handshake: echoReply(challenge)}, nil
}
