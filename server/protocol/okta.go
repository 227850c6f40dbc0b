package protocol

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Okta Event Hooks sign nothing: each request carries the static secret registered with the
// hook in a header (Authorization unless the hook's authScheme names another). The one-time
// verification is a GET carrying the same header and X-Okta-Verification-Challenge, answered
// with {"verification": "<challenge>"}.
const (
	oktaName              = "okta"
	oktaDefaultAuthHeader = "Authorization"
	oktaChallengeHeader   = "X-Okta-Verification-Challenge"
	oktaHeaderOption      = "header"
	oktaBatchIDPrefix     = "okta-events-sha256:"
)

// Okta returns the protocol for Okta Event Hooks.
//
// Verify rejects, in this order: no credential header (missing signature); an empty one
// (malformed signature); a value equal to no key (signature mismatch); then, for a verification
// request, an empty X-Okta-Verification-Challenge (malformed payload); for an event delivery, a
// body that is not a JSON object with a "data.events" array of objects (malformed payload), or
// an empty array or an event without a non-empty string "uuid" (missing event id). Nothing is
// timed and the body is not authenticated: Okta sends a fixed credential, not a signature.
//
// The endpoint option "header" names the credential header when the hook's authScheme.key is
// not Authorization.
//
// An accepted or duplicate delivery is answered 200 with no body: Okta's contract is that
// responses to event deliveries "should all be empty, and should have an HTTP status code of
// 200 (OK) or 204 (No Content)" (Event Hooks, "Your Service's Responses to Event Delivery
// Requests").
func Okta() *Protocol {
	return &Protocol{
		Name:             oktaName,
		DisplayName:      "Okta Event Hooks",
		SuccessReply:     &Reply{Status: 200}, // empty: see Okta's doc comment
		SignatureScheme:  "static secret in the Authorization header (or the hook's authScheme header), compared in constant time",
		SignsTimestamp:   false,
		StaticCredential: true,
		IdentitySource: `body "data.events[].uuid" (Okta's documented duplicate check): the uuid itself when the ` +
			`delivery holds one distinct event, else "okta-events-sha256:" + hex SHA-256 of the sorted ` +
			`distinct uuids joined by "\n"`,
		DocsURL: "https://developer.okta.com/docs/concepts/event-hooks/",
		Retries: "Delivery is at least once. If the endpoint does not answer within 3 seconds or answers " +
			"with an error, Okta attempts at most one retry; 4xx answers are not retried. Retries resend " +
			"the same body with the same static credential, and nothing is timed, so no tolerance applies; " +
			"the retried events keep their uuids and are caught as duplicates.",
		ParseSecret:        parseOktaSecret,
		ValidateOptions:    validateOktaOptions,
		Verify:             verifyOkta,
		CredentialLocation: func(options map[string]string) (string, string) { return oktaAuthHeader(options), "" },
		Sign:               signOkta,
		ExampleSecret:      sharedExample(""),
		ExampleBody:        oktaExampleBody,
	}
}

// parseOktaSecret keeps the header value's bytes. It must be a valid, non-empty header value
// without surrounding whitespace (which HTTP would strip).
func parseOktaSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the Okta event hook secret is empty")
	}
	if strings.TrimSpace(secret) != secret {
		return nil, invalidSecret("the Okta event hook secret has leading or trailing whitespace")
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return nil, invalidSecret("the Okta event hook secret contains control characters")
		}
	}
	return []byte(secret), nil
}

// validateOktaOptions accepts only "header": an HTTP header name (token characters).
func validateOktaOptions(options map[string]string) error {
	for k, v := range options {
		if k != oktaHeaderOption {
			return fmt.Errorf("okta: unknown option %q (only %q is supported)", k, oktaHeaderOption)
		}
		if !isHeaderName(v) {
			return fmt.Errorf("okta: option %q must be an HTTP header name", k)
		}
	}
	return nil
}

func oktaAuthHeader(options map[string]string) string {
	if h := options[oktaHeaderOption]; h != "" {
		return h
	}
	return oktaDefaultAuthHeader
}

// oktaExampleBody is an event hook delivery with one event whose uuid is the event id.
func oktaExampleBody(eventID string) []byte {
	return marshalJSONUnescaped(map[string]any{
		"eventType":          "com.okta.event_hook",
		"eventTypeVersion":   "1.0",
		"cloudEventsVersion": "0.1",
		"source":             "https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3",
		"eventId":            "c3ab1ed3-d6fa-4a4c-9b2d-4a0e8e5f2c2a",
		"data": map[string]any{
			"events": []any{map[string]any{
				"uuid":            eventID,
				"published":       "2025-12-29T09:20:00.000Z",
				"eventType":       "user.session.start",
				"version":         "0",
				"displayMessage":  "User login to Okta",
				"severity":        "INFO",
				"legacyEventType": "core.user_auth.login_success",
			}},
		},
		"eventTime":   "2025-12-29T09:20:01.000Z",
		"contentType": "application/json",
	})
}

func verifyOkta(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	name := oktaAuthHeader(p.Options)
	got, ok := req.Headers.Get(name)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", name)
	}
	if got == "" {
		return Result{}, Reject(ReasonMalformedSignature, "%s is empty", name)
	}
	// Compare digests so that neither the length nor the content leaks through timing.
	gotSum := sha256.Sum256([]byte(got))
	keyID, configured := "", false
	for _, k := range keys {
		if len(k.Material) == 0 {
			continue
		}
		configured = true
		want := sha256.Sum256(k.Material)
		if subtle.ConstantTimeCompare(gotSum[:], want[:]) == 1 {
			keyID = k.ID
			break
		}
	}
	if keyID == "" {
		if configured {
			return Result{}, Reject(ReasonSignatureMismatch, "%s matches no configured secret", name)
		}
		return Result{}, Reject(ReasonSignatureMismatch, "no secret is configured, so %s cannot match", name)
	}
	if challenge, ok := req.Headers.Get(oktaChallengeHeader); ok {
		if challenge == "" {
			return Result{}, Reject(ReasonMalformedPayload, "%s is empty", oktaChallengeHeader)
		}
		body := marshalJSONUnescaped(struct {
			Verification string `json:"verification"`
		}{challenge})
		return Result{KeyID: keyID, Handshake: jsonReply(body)}, nil
	}
	id, err := oktaEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id, CredentialHeader: name}, nil
}

// oktaEventID derives the delivery identity from data.events[].uuid.
func oktaEventID(body []byte) (string, error) {
	top, err := jsonObject(body)
	if err != nil {
		return "", err
	}
	var events []map[string]json.RawMessage
	data := jsonObjectField(top, "data")
	if raw, ok := data["events"]; !ok || json.Unmarshal(raw, &events) != nil {
		return "", Reject(ReasonMalformedPayload, `body has no "data.events" array of objects`)
	}
	if len(events) == 0 {
		return "", Reject(ReasonMissingEventID, `"data.events" is empty`)
	}
	seen := make(map[string]bool, len(events))
	var ids []string
	for _, ev := range events {
		id, _, ok := jsonString(ev, "uuid")
		if !ok || id == "" {
			return "", Reject(ReasonMissingEventID, `an event in "data.events" has no non-empty string "uuid"`)
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 1 {
		return ids[0], nil
	}
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return oktaBatchIDPrefix + hex.EncodeToString(sum[:]), nil
}

// signOkta produces the headers Okta sends with a delivery: the configured credential header
// carrying secrets[0] (a hook has one secret) and the JSON content type.
func signOkta(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("okta: sign needs a secret")
	}
	if _, err := parseOktaSecret(secrets[0]); err != nil {
		return nil, fmt.Errorf("okta: %w", err)
	}
	if err := validateOktaOptions(in.Options); err != nil {
		return nil, err
	}
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: oktaAuthHeader(in.Options), Value: secrets[0]},
	}, nil
}
