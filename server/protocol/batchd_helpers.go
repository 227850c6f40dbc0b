package protocol

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"strconv"
	"strings"
)

// Shared pieces of the batch-D providers (GoCardless, Mux, Persona, ...). Every name here is
// prefixed bd so that it cannot clash with other batches' helpers.

// bdEncoding is how a provider writes a MAC in its header.
type bdEncoding int

const (
	bdHex       bdEncoding = iota // lowercase hex
	bdBase64                      // padded standard base64
	bdBase64URL                   // unpadded URL-safe base64
)

// decode decodes s as exactly size bytes in the encoding's canonical form.
func (e bdEncoding) decode(s string, size int) ([]byte, bool) {
	switch e {
	case bdHex:
		return decodeLowerHex(s, size)
	case bdBase64:
		return decodeStdBase64(s, size)
	case bdBase64URL:
		return bdDecodeRawURLBase64(s, size)
	}
	return nil, false
}

// encode writes sum in the encoding.
func (e bdEncoding) encode(sum []byte) string {
	switch e {
	case bdBase64:
		return base64.StdEncoding.EncodeToString(sum)
	case bdBase64URL:
		return base64.RawURLEncoding.EncodeToString(sum)
	}
	return hex.EncodeToString(sum)
}

// describe names the encoding for rejection details.
func (e bdEncoding) describe(size int) string {
	switch e {
	case bdBase64:
		return strconv.Itoa(size) + " bytes of padded base64"
	case bdBase64URL:
		return strconv.Itoa(size) + " bytes of unpadded base64url"
	}
	return strconv.Itoa(2*size) + " lowercase hex digits"
}

// bdDecodeRawURLBase64 decodes s when it is exactly size bytes of unpadded base64url with
// canonical trailing bits, so no two header strings carry the same signature.
func bdDecodeRawURLBase64(s string, size int) ([]byte, bool) {
	if len(s) != base64.RawURLEncoding.EncodedLen(size) {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			return nil, false
		}
	}
	out, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(out) != size {
		return nil, false
	}
	return out, true
}

// bdSharedSecret returns a ParseSecret that keeps the secret's bytes as the HMAC key, as every
// batch-D shared-secret provider does, refusing an empty secret or one with surrounding
// whitespace (a copy-paste accident the provider would never display).
func bdSharedSecret(display string) func(string) ([]byte, error) {
	return func(secret string) ([]byte, error) {
		if secret == "" {
			return nil, invalidSecret("the " + display + " is empty")
		}
		if strings.TrimSpace(secret) != secret {
			return nil, invalidSecret("the " + display + " has leading or trailing whitespace")
		}
		return []byte(secret), nil
	}
}

// bdJSONString returns the non-empty string at path (object keys, matched exactly) in the JSON
// object body. A body that is not a JSON object is a malformed payload; a missing, non-string or
// empty value is a missing event id. JSON numbers are accepted too (Help Scout, Lob), in their
// literal form, when numeric is set.
func bdJSONString(body []byte, numeric bool, path ...string) (string, error) {
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
			return bdJSONScalar(raw, numeric, name)
		}
		obj = nil
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return "", Reject(ReasonMissingEventID, "body field %q is not an object", strings.Join(path[:i+1], "."))
		}
	}
	return "", Reject(ReasonMissingEventID, "no identity path")
}

// bdJSONScalar reads raw as a non-empty string, or a JSON number's literal when numeric.
func bdJSONScalar(raw json.RawMessage, numeric bool, name string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", Reject(ReasonMissingEventID, "body field %q is empty", name)
		}
		return s, nil
	}
	if numeric {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil && n != "" {
			return n.String(), nil
		}
	}
	return "", Reject(ReasonMissingEventID, "body field %q is not a string", name)
}

// bdWriteBody writes the raw body.
func bdWriteBody(body []byte) func(hash.Hash) {
	return func(mac hash.Hash) { mac.Write(body) }
}

// bdWriteJoined writes prefix, sep and body, the "{t}.{body}" family of messages, without
// copying the body.
func bdWriteJoined(prefix, sep string, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(prefix))
		mac.Write([]byte(sep))
		mac.Write(body)
	}
}

// bdBodyMAC is the most common scheme: one header carrying an HMAC of the raw body, optionally
// behind a literal prefix such as "sha256=", and no timestamp.
type bdBodyMAC struct {
	header   string
	prefix   string
	newHash  func() hash.Hash
	size     int
	encoding bdEncoding
}

// verify authenticates req's body with any of keys. It returns the matching key's id or a
// *Rejection: no header or an empty one (missing signature), a value without the prefix or not
// in the encoding (malformed signature), no key matching (signature mismatch).
func (c bdBodyMAC) verify(req *Request, keys []Key) (string, error) {
	if req == nil {
		return "", Reject(ReasonMissingSignature, "no request")
	}
	values := req.Headers.Values(c.header)
	if len(values) == 0 {
		return "", Reject(ReasonMissingSignature, "no %s header", c.header)
	}
	var sigs [][]byte
	malformed := 0
	for _, v := range values {
		digest, ok := strings.CutPrefix(v, c.prefix)
		if !ok {
			malformed++
			continue
		}
		sig, ok := c.encoding.decode(digest, c.size)
		if !ok {
			malformed++
			continue
		}
		sigs = append(sigs, sig)
	}
	keyID, ok := matchKey(keys, sigs, c.newHash, bdWriteBody(req.Body))
	if !ok {
		if malformed > 0 && len(sigs) == 0 {
			return "", Reject(ReasonMalformedSignature, "%s is not %s%s", c.header, c.prefix, c.encoding.describe(c.size))
		}
		return "", rejectNoMatch(c.header, malformed, keys)
	}
	return keyID, nil
}

// value returns the header value for body signed with key.
func (c bdBodyMAC) value(key, body []byte) string {
	return c.prefix + c.encoding.encode(hmacSum(c.newHash, key, bdWriteBody(body)))
}

// bdTVGroup is one "t=<unix>,v1=<sig>" set (Mux, Persona, Sanity). Persona sends two sets,
// space-separated, while a secret rotates.
type bdTVGroup struct {
	timestamp int64
	sigs      [][]byte
}

// bdTVHeader is a parsed t=,v1= header.
type bdTVHeader struct {
	groups    []bdTVGroup
	malformed int // v1 values not in the expected encoding
	others    int // elements of other schemes
}

// bdParseTV parses a header of space-separated sets of comma-separated k=v elements, each set
// with exactly one t (decimal unix seconds) and any number of scheme signatures. A set without
// t, a repeated t, an element that is not k=v, or an empty header is malformed. No scheme
// signature at all (only other schemes) is a missing signature. Errors are *Rejection.
func bdParseTV(header, v, scheme string, enc bdEncoding, size int, allowSets bool) (bdTVHeader, error) {
	var h bdTVHeader
	if strings.TrimSpace(v) == "" {
		return h, Reject(ReasonMalformedSignature, "%s is empty", header)
	}
	sets := []string{v}
	if allowSets {
		sets = strings.Fields(v)
	}
	for _, set := range sets {
		var g bdTVGroup
		seenT := false
		for _, part := range strings.Split(set, ",") {
			key, value, ok := strings.Cut(part, "=")
			if !ok || key == "" {
				return h, Reject(ReasonMalformedSignature, "%s has an element that is not key=value", header)
			}
			switch key {
			case "t":
				if seenT {
					return h, Reject(ReasonMalformedSignature, "%s has more than one t in a set", header)
				}
				seenT = true
				ts, ok := parseUnixSeconds(value)
				if !ok {
					return h, Reject(ReasonMalformedSignature, "%s t is not unix seconds", header)
				}
				g.timestamp = ts
			case scheme:
				sig, ok := enc.decode(value, size)
				if !ok {
					h.malformed++
					continue
				}
				g.sigs = append(g.sigs, sig)
			default:
				h.others++
			}
		}
		if !seenT {
			return h, Reject(ReasonMalformedSignature, "%s has a set without a t timestamp", header)
		}
		h.groups = append(h.groups, g)
	}
	n := 0
	for _, g := range h.groups {
		n += len(g.sigs)
	}
	if n == 0 && h.malformed == 0 {
		return h, Reject(ReasonMissingSignature, "%s has no %s signature (%d element(s) of other schemes are ignored)", header, scheme, h.others)
	}
	return h, nil
}

// bdMatchTV finds a set and key that authenticate body, the message being "{t}{sep}{body}",
// and whose t passes check. It returns the matching key id, or a *Rejection: the first check
// failure when some set authenticated but none passed check (a stale set does not hide a
// fresh one), else why nothing matched.
func bdMatchTV(header string, h bdTVHeader, keys []Key, newHash func() hash.Hash, sep string, body []byte, check func(int64) error) (string, error) {
	var firstErr error
	for _, g := range h.groups {
		ts := strconv.FormatInt(g.timestamp, 10)
		keyID, ok := matchKey(keys, g.sigs, newHash, bdWriteJoined(ts, sep, body))
		if !ok {
			continue
		}
		err := check(g.timestamp)
		if err == nil {
			return keyID, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", rejectNoMatch(header, h.malformed, keys)
}

// bdHeaderIdentity returns the non-empty value of the named header as the event identity.
func bdHeaderIdentity(req *Request, name string) (string, error) {
	id, _ := req.Headers.Get(name)
	if id == "" {
		return "", Reject(ReasonMissingEventID, "no %s header", name)
	}
	return id, nil
}

// jsonEscapeBD returns s as the inside of a JSON string literal.
func jsonEscapeBD(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
