package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// GitLab authenticates webhooks in one of two ways:
//   - classic: X-Gitlab-Token carries the webhook's secret token itself, in plain text (no
//     signature: the body is not authenticated and a captured request can be replayed);
//   - signed (GitLab MR !230944, behind the webhook_signing_token feature flag): with a signing
//     token configured, GitLab follows the Standard Webhooks spec — webhook-signature
//     "v1,<base64 HMAC-SHA256>" over "{webhook-id}.{webhook-timestamp}.{body}", webhook-id equal
//     to the Idempotency-Key header, webhook-timestamp in unix seconds.
const (
	gitlabName              = "gitlab"
	gitlabTokenHeader       = "X-Gitlab-Token"
	gitlabIdempotencyHeader = "Idempotency-Key"
	gitlabEventUUIDHeader   = "X-Gitlab-Event-UUID"
	gitlabDefaultTolerance  = 300 * time.Second
	// gitlabRequireSignature is the endpoint option that refuses classic token deliveries.
	gitlabRequireSignature = "require_signature"

	// Secret kinds, the first byte of the key material.
	gitlabKindSigning = 1 // "whsec_<base64>": a Standard Webhooks signing token
	gitlabKindToken   = 2 // anything else: a secret token, or a signing token without the prefix
)

// GitLab returns the protocol for GitLab project, group and system webhooks.
//
// A secret is either a signing token written "whsec_<base64>" (used only for webhook-signature)
// or any other string, which is compared with X-Gitlab-Token and, when it is valid base64, is
// also tried as a signing token without the prefix (the standardwebhooks libraries that GitLab's
// MR validates against strip an optional "whsec_" and base64-decode). How GitLab displays the
// signing token is NOT CONFIRMED in its docs.
//
// When webhook-signature is present it decides, but for a signature that fails on an endpoint
// not requiring signatures: then an X-Gitlab-Token matching a secret token authenticates the
// delivery, as it would without the signature header (GitLab sends both when a hook has both
// tokens, and retries nothing). The endpoint option require_signature=true refuses deliveries
// that carry only X-Gitlab-Token and signed ones whose signature fails, closing the
// replay/forgery window of the plain-text token once signing is enabled.
//
// Verify rejects, in this order: for signed deliveries exactly as the standard-webhooks
// protocol does (missing/malformed signature, missing timestamp, missing webhook-id, signature
// mismatch, timestamp out of tolerance), unless the token authenticates them as above (then
// for no Idempotency-Key nor X-Gitlab-Event-UUID, missing event id); for classic deliveries:
// an endpoint requiring
// signatures (missing signature), an empty X-Gitlab-Token (malformed signature), no key equal
// to it, compared in constant time (signature mismatch), no Idempotency-Key nor
// X-Gitlab-Event-UUID (missing event id); neither header (missing signature).
func GitLab() *Protocol {
	return &Protocol{
		Name:             gitlabName,
		DisplayName:      "GitLab",
		SignatureScheme:  `X-Gitlab-Token secret token (constant-time), or Standard Webhooks webhook-signature v1 HMAC-SHA256 (base64) of "{webhook-id}.{timestamp}.{body}" when a signing token is set (a signature that fails leaves the token to decide, unless the endpoint option require_signature=true)`,
		SignsTimestamp:   true,
		DefaultTolerance: gitlabDefaultTolerance,
		IdentitySource: "signed deliveries: the signed webhook-id (equal to Idempotency-Key); token deliveries: the Idempotency-Key " +
			"header (the same when a delivery is resent), else X-Gitlab-Event-UUID + \":\" + sha256 of the raw body " +
			"(\"<uuid>:body-sha256:<hex>\"; GitLab versions before Idempotency-Key, where webhooks fired by a request " +
			"from a webhook receiver share the UUID)",
		StaticCredential: true,
		DocsURL:          "https://docs.gitlab.com/user/project/integrations/webhooks/",
		Retries: "GitLab does not retry failed webhooks automatically (it counts failures and auto-disables the hook); a " +
			"delivery resent from the UI or API keeps its Idempotency-Key and, when signed, is signed afresh at send " +
			"time, so the 5-minute tolerance (both directions, signed deliveries only) fits. Classic token deliveries " +
			"carry no timestamp.",
		ParseSecret:        parseGitLabSecret,
		ValidateOptions:    validateGitLabOptions,
		Verify:             verifyGitLab,
		CredentialLocation: func(map[string]string) (string, string) { return gitlabTokenHeader, "" },
		Sign:               signGitLab,
		ExampleSecret:      exampleStandardWebhooksSecret,
	}
}

// parseGitLabSecret tags the secret with its kind and keeps its text; a whsec_ secret must
// decode as a Standard Webhooks secret.
func parseGitLabSecret(secret string) ([]byte, error) {
	if strings.HasPrefix(secret, standardWebhooksSecretPrefix) {
		if _, err := parseStandardWebhooksSecret(secret); err != nil {
			return nil, invalidSecret("the GitLab signing token is not whsec_ followed by base64")
		}
		return append([]byte{gitlabKindSigning}, secret...), nil
	}
	if _, err := parseTokenSecret("the GitLab secret token", secret); err != nil {
		return nil, err
	}
	return append([]byte{gitlabKindToken}, secret...), nil
}

// validateGitLabOptions accepts only require_signature=true|false.
func validateGitLabOptions(options map[string]string) error {
	for k, v := range options {
		if k != gitlabRequireSignature {
			return fmt.Errorf("gitlab: unknown option %q (only %s)", k, gitlabRequireSignature)
		}
		if v != "true" && v != "false" {
			return fmt.Errorf("gitlab: option %s must be true or false", gitlabRequireSignature)
		}
	}
	return nil
}

// gitlabSigningKeys derives the HMAC keys to try for webhook-signature from the endpoint keys.
func gitlabSigningKeys(keys []Key) []Key {
	out := make([]Key, 0, len(keys))
	for _, k := range keys {
		if len(k.Material) < 2 {
			continue
		}
		secret := string(k.Material[1:])
		var hmacKey []byte
		switch k.Material[0] {
		case gitlabKindSigning:
			hmacKey, _ = parseStandardWebhooksSecret(secret)
		case gitlabKindToken:
			if b, err := base64.StdEncoding.DecodeString(secret); err == nil {
				hmacKey = b
			} else if b, err := base64.RawStdEncoding.DecodeString(secret); err == nil {
				hmacKey = b
			}
		}
		if len(hmacKey) > 0 {
			out = append(out, Key{ID: k.ID, Material: hmacKey})
		}
	}
	return out
}

func verifyGitLab(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	requireSignature := p.Options[gitlabRequireSignature] == "true"
	token, hasToken := req.Headers.Get(gitlabTokenHeader)
	if raw, ok := req.Headers.Get("webhook-signature"); ok {
		res, err := verifyGitLabSigned(req, raw, keys, p)
		if err == nil || requireSignature || !hasToken {
			return res, err
		}
		// A hook with both a secret token and a signing token sends both headers. An endpoint
		// that does not require signatures takes the token when the signature fails (a signing
		// token enabled in GitLab before it was added here, say): GitLab does not retry, and
		// auto-disables a hook that keeps failing, so the delivery would be lost, while anyone
		// holding the token could send it without the signature header anyway. The secret
		// that matched tells which one authenticated it.
		res, tokenErr := verifyGitLabToken(req, token, keys)
		if tokenErr == nil || ReasonOf(tokenErr) == ReasonMissingEventID {
			// Authenticated by the token, and only its id missing: that is what keeps it out,
			// for good, as without the signature header (the signature's reason, a mismatch,
			// would have the server answer UNAVAILABLE while a secret cannot be opened).
			return res, tokenErr
		}
		return Result{}, err
	}
	if !hasToken {
		return Result{}, Reject(ReasonMissingSignature, "no webhook-signature or %s header", gitlabTokenHeader)
	}
	if requireSignature {
		return Result{}, Reject(ReasonMissingSignature,
			"the endpoint requires webhook-signature and this delivery carries only %s", gitlabTokenHeader)
	}
	return verifyGitLabToken(req, token, keys)
}

// verifyGitLabToken authenticates a delivery by its X-Gitlab-Token, the secret token itself.
func verifyGitLabToken(req *Request, token string, keys []Key) (Result, error) {
	if token == "" {
		return Result{}, Reject(ReasonMalformedSignature, "%s is empty", gitlabTokenHeader)
	}
	// Hash both sides so the comparison takes the same time whatever the lengths.
	got := sha256.Sum256([]byte(token))
	keyID := ""
	for _, k := range keys {
		if len(k.Material) < 2 {
			continue
		}
		want := sha256.Sum256(k.Material[1:])
		if hmac.Equal(got[:], want[:]) {
			keyID = k.ID
			break
		}
	}
	if keyID == "" {
		return Result{}, rejectNoMatch(gitlabTokenHeader, 0, keys)
	}
	if id, _ := req.Headers.Get(gitlabIdempotencyHeader); id != "" {
		return Result{KeyID: keyID, EventID: id, CredentialHeader: gitlabTokenHeader}, nil
	}
	// X-Gitlab-Event-UUID is not an event id: when an API request carries the X-Gitlab-Event-UUID
	// of the webhook it answers, GitLab sends that same UUID on every webhook the request fires
	// ("Recursive webhooks have the same value for this header", GitLab's webhook docs;
	// lib/gitlab/web_hooks/recursion_detection/uuid.rb), so a receiver that passes the header on
	// when it comments and closes an issue gets the note and issue events under one UUID. The
	// body's hash beside it keeps those apart, while the same delivery sent twice stays one event.
	if uuid, _ := req.Headers.Get(gitlabEventUUIDHeader); uuid != "" {
		return Result{KeyID: keyID, EventID: uuid + ":" + bodySHA256ID(req.Body), CredentialHeader: gitlabTokenHeader}, nil
	}
	return Result{}, Reject(ReasonMissingEventID, "no %s or %s header", gitlabIdempotencyHeader, gitlabEventUUIDHeader)
}

func verifyGitLabSigned(req *Request, raw string, keys []Key, p Params) (Result, error) {
	names := standardWebhooksFamilies[0]
	sig, err := parseStandardWebhooksSignature(names.signature, raw)
	if err != nil {
		return Result{}, err
	}
	tsRaw, _ := req.Headers.Get(names.timestamp)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", names.timestamp)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not decimal unix seconds", names.timestamp)
	}
	id, _ := req.Headers.Get(names.id)
	if id == "" {
		return Result{}, Reject(ReasonMissingEventID, "no %s header", names.id)
	}
	keyID, ok := matchKey(gitlabSigningKeys(keys), sig.signatures, sha256.New, standardWebhooksMessage(id, ts, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(names.signature, sig.malformed, keys)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, gitlabDefaultTolerance)); err != nil {
		return Result{}, err
	}
	// A signed delivery may carry the secret token too, when the webhook has both.
	return Result{KeyID: keyID, EventID: id, CredentialHeader: gitlabTokenHeader}, nil
}

// signGitLab produces what GitLab sends for secrets[0] (a hook has one secret token and one
// signing token): for a whsec_ signing token, webhook-id, webhook-timestamp, webhook-signature
// and Idempotency-Key (= in.EventID); for any other secret, the classic X-Gitlab-Token and
// Idempotency-Key. X-Gitlab-Event is omitted: SignInput carries no event type.
func signGitLab(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("gitlab: sign needs a secret token or signing token")
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("gitlab: %w for Idempotency-Key", ErrSignNeedsEventID)
	}
	material, err := parseGitLabSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	if material[0] == gitlabKindToken {
		return Headers{
			{Name: gitlabIdempotencyHeader, Value: in.EventID},
			{Name: gitlabTokenHeader, Value: secrets[0]},
		}, nil
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("gitlab: sign needs a timestamp at or after 1970")
	}
	key, _ := parseStandardWebhooksSecret(secrets[0])
	ts := in.Timestamp.Unix()
	sum := hmacSum(sha256.New, key, standardWebhooksMessage(in.EventID, ts, in.Body))
	names := standardWebhooksFamilies[0]
	return Headers{
		{Name: gitlabIdempotencyHeader, Value: in.EventID},
		{Name: names.id, Value: in.EventID},
		{Name: names.timestamp, Value: strconv.FormatInt(ts, 10)},
		{Name: names.signature, Value: standardWebhooksScheme + "," + base64.StdEncoding.EncodeToString(sum)},
	}, nil
}
