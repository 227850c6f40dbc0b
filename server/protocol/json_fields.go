package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Reading fields of JSON bodies and writing JSON strings into example bodies.
// marshalJSONUnescaped also writes the JSON of handshake replies.

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

// jsonBodyString returns the non-empty string at path (object keys, matched exactly, one level
// per element) in the JSON object body. A body that is not a JSON object is a malformed
// payload; a missing, non-string or empty value is a missing event id.
func jsonBodyString(body []byte, path ...string) (string, error) {
	obj, err := jsonObject(body)
	if err != nil {
		return "", err
	}
	name := strings.Join(path, ".")
	for i, key := range path {
		raw, ok := obj[key]
		if !ok {
			return "", Reject(ReasonMissingEventID, "body has no %q field", name)
		}
		if i == len(path)-1 {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", Reject(ReasonMissingEventID, "body field %q is not a string", name)
			}
			if s == "" {
				return "", Reject(ReasonMissingEventID, "body field %q is empty", name)
			}
			return s, nil
		}
		obj = nil
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return "", Reject(ReasonMissingEventID, "body field %q is not an object", strings.Join(path[:i+1], "."))
		}
	}
	return "", Reject(ReasonMissingEventID, "no identity path")
}

// jsonQuote is s as a JSON string literal, quotes included.
func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonEscape is s as the inside of a JSON string literal.
func jsonEscape(s string) string {
	q := jsonQuote(s)
	return q[1 : len(q)-1]
}

// looksLikeJSONObject reports whether body's first non-space byte opens a JSON object.
func looksLikeJSONObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// marshalJSONUnescaped marshals v without HTML escaping, so tokens echo back byte for byte.
func marshalJSONUnescaped(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
