package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Helpers every provider file may use.

// bodyHashPrefix marks an identity derived from the raw body, for deliveries whose provider
// sends no stable event id: a retry carries the same bytes and so the same identity, while two
// distinct events with byte-identical bodies would be taken for one (which is why a provider id
// is always preferred where one exists).
const bodyHashPrefix = "body-sha256:"

// bodySHA256ID is the fallback identity "body-sha256:<lowercase hex SHA-256 of the raw body>".
func bodySHA256ID(body []byte) string {
	sum := sha256.Sum256(body)
	return bodyHashPrefix + hex.EncodeToString(sum[:])
}

// jsonObject parses body as one JSON object. Its error is a *Rejection (malformed payload).
func jsonObject(body []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, Reject(ReasonMalformedPayload, "body is not a JSON object")
	}
	return top, nil
}

// jsonString returns obj[key] as a string. present says the key exists; ok says it holds a
// JSON string (possibly empty).
func jsonString(obj map[string]json.RawMessage, key string) (s string, present, ok bool) {
	raw, present := obj[key]
	if !present {
		return "", false, false
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, false
	}
	return s, true, true
}

// jsonObjectField returns obj[key] as a JSON object, or nil when absent or not an object.
func jsonObjectField(obj map[string]json.RawMessage, key string) map[string]json.RawMessage {
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
