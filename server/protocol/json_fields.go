package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
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
//
// It answers exactly as decoding the body into map[string]json.RawMessage would (a document
// json.Unmarshal refuses is malformed; of repeated keys the last counts; keys compare once
// unescaped), without building the maps: the body is checked with validJSON (json.Valid's
// answer, faster) and then only the members on the path are read. Decoding a 2 KiB Stripe
// event into maps took about five times as long as verifying its signature, on every delivery.
func jsonBodyString(body []byte, path ...string) (string, error) {
	if !validJSON(body) {
		return "", Reject(ReasonMalformedPayload, "body is not a JSON object")
	}
	obj, ok := jsonObjectBytes(body)
	if !ok {
		return "", Reject(ReasonMalformedPayload, "body is not a JSON object")
	}
	name := strings.Join(path, ".")
	for i, key := range path {
		raw, ok := jsonMember(obj, key)
		if !ok {
			return "", Reject(ReasonMissingEventID, "body has no %q field", name)
		}
		if i == len(path)-1 {
			return jsonIDString(raw, name)
		}
		if obj, ok = jsonObjectBytes(raw); !ok {
			return "", Reject(ReasonMissingEventID, "body field %q is not an object", strings.Join(path[:i+1], "."))
		}
	}
	return "", Reject(ReasonMissingEventID, "no identity path")
}

// jsonIDString returns raw, the value at the body path name, as a non-empty JSON string, or the
// missing-event-id rejection that says why it is not one.
func jsonIDString(raw []byte, name string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", Reject(ReasonMissingEventID, "body field %q is not a string", name)
	}
	if s == "" {
		return "", Reject(ReasonMissingEventID, "body field %q is empty", name)
	}
	return s, nil
}

// jsonObjectBytes returns the valid JSON value v without surrounding space if it is an object.
func jsonObjectBytes(v []byte) ([]byte, bool) {
	v = bytes.Trim(v, jsonSpace)
	return v, len(v) > 0 && v[0] == '{'
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// jsonMember returns the raw value of the last member named key of obj, a valid JSON object,
// and whether there is one. Member names compare after unescaping, as encoding/json does for
// map keys (invalid UTF-8 becomes U+FFFD).
func jsonMember(obj []byte, key string) ([]byte, bool) {
	var found []byte
	ok := false
	i := skipJSONSpace(obj, 1) // past '{'
	for i < len(obj) && obj[i] == '"' {
		end := scanJSONString(obj, i)
		name := obj[i:end]
		i = skipJSONSpace(obj, end) + 1 // past ':'
		start := skipJSONSpace(obj, i)
		i = skipJSONValue(obj, start)
		if jsonNameIs(name, key) {
			found, ok = obj[start:i], true
		}
		i = skipJSONSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipJSONSpace(obj, i+1)
		}
	}
	return found, ok
}

// jsonNameIs reports whether the quoted JSON string name, unescaped, is key.
func jsonNameIs(name []byte, key string) bool {
	inner := name[1 : len(name)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(inner) == key
	}
	var s string
	return json.Unmarshal(name, &s) == nil && s == key
}

// The skip functions step over one token of a document validJSON accepted, so they need not
// check it again; each returns the index just past what it skipped. Strings are stepped over
// with scanJSONString, whose checks then always pass.

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipJSONValue skips the value starting at b[i]: a string, an object or array (nested to any
// depth), or a number or literal.
func skipJSONValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return scanJSONString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = scanJSONString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
			i++
		}
		return i
	}
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
	t := bytes.TrimLeft(body, jsonSpace)
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
