package protocol

import (
	"errors"
	"fmt"
	"hash"
	"strings"
)

// The providers that sign nothing but the raw body, with an HMAC carried in a header. Two
// forms exist because the providers differ in the details: bodyMAC reads every value of one
// header behind a literal prefix; bodyMACScheme takes the first of several header names and
// understands "version=" tags and comma-separated lists of signatures.

// macMessage writes prefix (each part in order) and then body into the MAC, without copying
// the body: macMessage(body) is the body alone, macMessage(body, ts, ".") is "{ts}.{body}".
func macMessage(body []byte, prefix ...string) func(hash.Hash) {
	return func(mac hash.Hash) {
		for _, p := range prefix {
			mac.Write([]byte(p))
		}
		mac.Write(body)
	}
}

// bodyMAC is the most common scheme: one header carrying an HMAC of the raw body, optionally
// behind a literal prefix such as "sha256=", and no timestamp.
type bodyMAC struct {
	header   string
	prefix   string
	newHash  func() hash.Hash
	size     int
	encoding digestEncoding
}

// verify authenticates req's body with any of keys. It returns the matching key's id or a
// *Rejection: no header or an empty one (missing signature), a value without the prefix or not
// in the encoding (malformed signature), no key matching (signature mismatch).
func (m bodyMAC) verify(req *Request, keys []Key) (string, error) {
	if req == nil {
		return "", Reject(ReasonMissingSignature, "no request")
	}
	values := req.Headers.Values(m.header)
	if len(values) == 0 {
		return "", Reject(ReasonMissingSignature, "no %s header", m.header)
	}
	var sigs [][]byte
	malformed := 0
	for _, v := range values {
		digest, ok := strings.CutPrefix(v, m.prefix)
		if !ok {
			malformed++
			continue
		}
		sig, ok := m.encoding.decode(digest, m.size)
		if !ok {
			malformed++
			continue
		}
		sigs = append(sigs, sig)
	}
	keyID, ok := matchKey(keys, sigs, m.newHash, macMessage(req.Body))
	if !ok {
		if malformed > 0 && len(sigs) == 0 {
			return "", Reject(ReasonMalformedSignature, "%s is not %s%s", m.header, m.prefix, m.encoding.describe(m.size))
		}
		return "", rejectNoMatch(m.header, malformed, keys)
	}
	return keyID, nil
}

// verifier returns the Verify of a provider whose delivery is the signed body alone: the body
// is authenticated (see verify), then identity names the event (bodyHashIdentity for a
// provider that sends no event id).
func (m bodyMAC) verifier(identity func(*Request) (string, error)) func(*Request, []Key, Params) (Result, error) {
	return func(req *Request, keys []Key, _ Params) (Result, error) {
		keyID, err := m.verify(req, keys)
		if err != nil {
			return Result{}, err
		}
		id, err := identity(req)
		if err != nil {
			return Result{}, err
		}
		return Result{KeyID: keyID, EventID: id}, nil
	}
}

// value returns the header value for body signed with key.
func (m bodyMAC) value(key, body []byte) string {
	return m.prefix + m.encoding.encode(hmacSum(m.newHash, key, macMessage(body)))
}

// signJSON returns the headers of a JSON delivery of in.Body signed as provider does:
// Content-Type and the signature header. Such a provider holds one secret per webhook, so only
// secrets[0] signs; parse is the provider's ParseSecret.
func (m bodyMAC) signJSON(provider string, parse func(string) ([]byte, error), in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New(provider + ": sign needs a secret")
	}
	key, err := parse(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", provider, err)
	}
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: m.header, Value: m.value(key, in.Body)},
	}, nil
}

// bodyMACScheme is an HMAC over the raw request body, carried in one header.
type bodyMACScheme struct {
	// headers are the signature header names in order of preference; the first one present
	// with a non-empty value is used (an empty one is judged malformed).
	headers []string
	// version, when set, is the "version=" prefix of every signature ("sha256" in
	// "sha256=<sig>"); a signature with another version is ignored, not failed.
	version string
	// list says the header carries a comma-separated list of signatures (rotation).
	list    bool
	newHash func() hash.Hash
	size    int
	enc     digestEncoding
}

// bodyMACSignatures is a parsed signature header.
type bodyMACSignatures struct {
	header     string
	signatures [][]byte
	malformed  int
}

// parse finds and parses the signature header. Its errors are *Rejection.
func (s bodyMACScheme) parse(h Headers) (bodyMACSignatures, error) {
	out := bodyMACSignatures{}
	found := false
	var raw string
	for _, name := range s.headers {
		v, ok := h.Get(name)
		if !ok {
			continue
		}
		if !found {
			out.header, raw, found = name, v, true
		}
		if v != "" {
			out.header, raw = name, v
			break
		}
	}
	if !found {
		return out, Reject(ReasonMissingSignature, "no %s header", strings.Join(s.headers, " or "))
	}
	if raw == "" {
		return out, Reject(ReasonMalformedSignature, "%s is empty", out.header)
	}
	entries := []string{raw}
	if s.list {
		entries = strings.Split(raw, ",")
	}
	others := 0
	for _, entry := range entries {
		if s.list {
			entry = strings.Trim(entry, " ")
		}
		sig := entry
		if s.version != "" {
			version, rest, ok := cutByte(entry, '=')
			if !ok {
				out.malformed++
				continue
			}
			if version != s.version {
				others++
				continue
			}
			sig = rest
		}
		b, ok := s.enc.decode(sig, s.size)
		if !ok {
			out.malformed++
			continue
		}
		out.signatures = append(out.signatures, b)
	}
	switch {
	case len(out.signatures) > 0:
		return out, nil
	case out.malformed > 0:
		return out, Reject(ReasonMalformedSignature, "%s has no well-formed signature (%s not %d bytes of %s)",
			out.header, plural(out.malformed, "entry is", "entries are"), s.size, s.enc)
	}
	return out, Reject(ReasonMissingSignature, "%s has no %s= signature (%d of other versions are ignored)", out.header, s.version, others)
}

// authenticate checks req's body against keys and returns the matching key's id.
func (s bodyMACScheme) authenticate(req *Request, keys []Key) (string, error) {
	if req == nil {
		return "", Reject(ReasonMissingSignature, "no request")
	}
	sigs, err := s.parse(req.Headers)
	if err != nil {
		return "", err
	}
	keyID, ok := matchKey(keys, sigs.signatures, s.newHash, macMessage(req.Body))
	if !ok {
		return "", rejectNoMatch(sigs.header, sigs.malformed, keys)
	}
	return keyID, nil
}

// signature returns the header value for body under the keys: one "version=sig" entry per key
// for a list scheme, else only the first key's.
func (s bodyMACScheme) signature(body []byte, keys [][]byte) string {
	if !s.list && len(keys) > 1 {
		keys = keys[:1]
	}
	entries := make([]string, 0, len(keys))
	for _, k := range keys {
		sig := s.enc.encode(hmacSum(s.newHash, k, macMessage(body)))
		if s.version != "" {
			sig = s.version + "=" + sig
		}
		entries = append(entries, sig)
	}
	return strings.Join(entries, ",")
}

// bodyMACProvider is a provider that signs only the raw body (bodyMACScheme) and names its
// event in a header or in the body.
type bodyMACProvider struct {
	name   string
	scheme bodyMACScheme
	secret func(string) ([]byte, error)
	// identity extracts the event identity of an authenticated request.
	identity func(req *Request) (string, error)
	// extra returns the headers Sign adds beside the signature (the identity headers).
	extra func(in SignInput) (Headers, error)
}

// verify authenticates the body, then extracts the identity.
func (b bodyMACProvider) verify(req *Request, keys []Key, _ Params) (Result, error) {
	keyID, err := b.scheme.authenticate(req, keys)
	if err != nil {
		return Result{}, err
	}
	id, err := b.identity(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// sign returns the signature header (one entry per secret for a list scheme, else the first
// secret's) followed by the extra headers.
func (b bodyMACProvider) sign(in SignInput, secrets []string) (Headers, error) {
	keys, err := parseSigningKeys(b.name, secrets, b.secret)
	if err != nil {
		return nil, err
	}
	h := Headers{{Name: b.scheme.headers[0], Value: b.scheme.signature(in.Body, keys)}}
	if b.extra != nil {
		more, err := b.extra(in)
		if err != nil {
			return nil, err
		}
		h = append(h, more...)
	}
	return h, nil
}

// eventIDHeader returns an extra-headers function that sends in.EventID in the named header.
func eventIDHeader(provider, name string) func(SignInput) (Headers, error) {
	return func(in SignInput) (Headers, error) {
		if in.EventID == "" {
			return nil, fmt.Errorf("%s: %w for %s", provider, ErrSignNeedsEventID, name)
		}
		return Headers{{Name: name, Value: in.EventID}}, nil
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
