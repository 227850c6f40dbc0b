package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Helpers shared by the Twilio, Square, HubSpot, Mailgun, Adyen, Plaid and GitLab protocols.

// b2BodyIDPrefix marks an identity derived from the body bytes because the provider sends no
// stable event id for that delivery: the same bytes delivered twice are the same event.
const b2BodyIDPrefix = "body-sha256:"

// b2BodySHA256ID is the fallback identity "body-sha256:<hex SHA-256 of the raw body>".
func b2BodySHA256ID(body []byte) string {
	sum := sha256.Sum256(body)
	return b2BodyIDPrefix + hex.EncodeToString(sum[:])
}

// b2JSONObject parses body as one JSON object. Its errors are *Rejection (malformed payload).
func b2JSONObject(body []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, Reject(ReasonMalformedPayload, "body is not a JSON object")
	}
	return top, nil
}

// b2String returns obj[key] as a string. present says the key exists; ok says it holds a JSON
// string (possibly empty).
func b2String(obj map[string]json.RawMessage, key string) (s string, present, ok bool) {
	raw, present := obj[key]
	if !present {
		return "", false, false
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, false
	}
	return s, true, true
}

// b2Object returns obj[key] as a JSON object, or nil when absent or not an object.
func b2Object(obj map[string]json.RawMessage, key string) map[string]json.RawMessage {
	raw, ok := obj[key]
	if !ok {
		return nil
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil
	}
	return out
}

// b2TokenSecret checks a secret that is used as its own bytes (an auth token, a signing key
// string): non-empty, printable ASCII, no spaces. what names it in the error, which never
// quotes the secret.
func b2TokenSecret(what, secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret(what + " is empty")
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return nil, invalidSecret(what + " contains whitespace or a character that is not printable ASCII")
		}
	}
	return []byte(secret), nil
}
