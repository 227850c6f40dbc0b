package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Contentful request verification (webhooks, app events, app actions) puts in
// x-contentful-signature the lowercase hex HMAC-SHA256, keyed with the 64-character signing
// secret, of the canonical request
//
//	method "\n" path "\n" name:value;name:value... "\n" body
//
// where path is the request path and query normalized as the official @contentful/node-apps-
// toolkit does (getNormalizedEncodedURI), and the headers are those named in
// x-contentful-signed-headers plus that header and x-contentful-timestamp (unix milliseconds),
// names lowercased, values trimmed, sorted by name.
const (
	contentfulName            = "contentful"
	contentfulSignatureHeader = "x-contentful-signature"
	contentfulSignedHeaders   = "x-contentful-signed-headers"
	contentfulTimestampHeader = "x-contentful-timestamp"
	// Details name the headers capitalized, as they are displayed in Contentful's docs.
	contentfulSignatureName    = "X-Contentful-Signature"
	contentfulSignedName       = "X-Contentful-Signed-Headers"
	contentfulTimestampName    = "X-Contentful-Timestamp"
	contentfulIdempotency      = "x-contentful-idempotency-key"
	contentfulDefaultTolerance = 5 * time.Minute
	contentfulSecretLength     = 64
)

// Contentful returns the protocol for Contentful webhooks with request verification enabled.
// A secret is the 64-character signing secret; several may be configured during rotation.
//
// The identity is the X-Contentful-Idempotency-Key header (a SHA-256 Contentful assigns to
// each fired webhook, so that a webhook fired twice for one action can be dropped) when it is
// among the signed headers; otherwise, the X-Contentful-Topic value (when signed), ":",
// "body-sha256:" and the hex SHA-256 of the raw body.
//
// Verify rejects, in this order: no x-contentful-signature (missing signature); a signature
// that is not 64 lowercase hex digits (malformed signature); no or non-numeric
// x-contentful-timestamp (missing timestamp); no x-contentful-signed-headers, or one naming a
// header the request lacks (malformed signature); no URL forwarded (missing signature: the
// path is signed); no key matching (signature mismatch); the timestamp more than the
// tolerance from Now in either direction (the toolkit checks only age, default 30 s).
func Contentful() *Protocol {
	return &Protocol{
		Name:             contentfulName,
		DisplayName:      "Contentful",
		SignatureScheme:  "HMAC-SHA256 (hex) of method, path, signed headers and body, x-contentful-signature",
		SignsTimestamp:   true,
		DefaultTolerance: contentfulDefaultTolerance,
		IdentitySource:   "X-Contentful-Idempotency-Key header when it is among the signed headers; else X-Contentful-Topic + \":\" + sha256 of the raw body (\"<topic>:body-sha256:<hex>\") when the topic is signed, the hash alone when it is not",
		NeedsURL:         true,
		DocsURL:          "https://www.contentful.com/developers/docs/webhooks/request-verification/",
		Retries: "Each call is signed when it is sent, with x-contentful-timestamp in milliseconds; Contentful's toolkit " +
			"rejects requests older than 30 s by default. The 5-minute default here allows for clock skew both ways; the " +
			"retry schedule was not confirmed, and a retry that reused an old signature would be rejected once older than the tolerance.",
		ParseSecret:   parseContentfulSecret,
		Verify:        verifyContentful,
		Sign:          signContentful,
		ExampleSecret: exampleContentfulSecret,
	}
}

// parseContentfulSecret checks the toolkit's rule (a 64-character string) and keeps its bytes.
func parseContentfulSecret(secret string) ([]byte, error) {
	if len(secret) != contentfulSecretLength {
		return nil, invalidSecret("a Contentful signing secret is 64 characters")
	}
	for i := 0; i < len(secret); i++ {
		if secret[i] <= ' ' || secret[i] >= 0x7f {
			return nil, invalidSecret("a Contentful signing secret is printable ASCII without spaces")
		}
	}
	return []byte(secret), nil
}

// contentfulPath is the path and query of raw as sent, normalized like the toolkit's
// getNormalizedEncodedURI: split at '?' (text after a second '?' is dropped, as JavaScript's
// destructuring of split does), the query escaped with querystring.escape, the whole with
// encodeURI.
func contentfulPath(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return "", false
	}
	// The path as received, which the toolkit is given (req.url), cut from raw: EscapedPath
	// would re-escape characters Go thinks need it ('|', '^', raw UTF-8), which encodeURI
	// below would then escape a second time.
	uri := rawURLPath(raw, u.Scheme)
	if uri == "" {
		uri = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		uri += "?" + u.RawQuery
	}
	parts := strings.Split(uri, "?")
	out := parts[0]
	if len(parts) > 1 && parts[1] != "" {
		out += "?" + contentfulEscape(parts[1], "-_.!~*'()")
	}
	return contentfulEscape(out, ";,/?:@&=+$-_.!~*'()#"), true
}

// rawURLPath is the path of raw, a URL that url.Parse accepted with the given scheme, byte for
// byte as written: what follows the scheme and authority, up to the query or fragment.
func rawURLPath(raw, scheme string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if scheme != "" {
		raw = raw[len(scheme)+1:]
	}
	// An authority follows "//" as url.Parse reads it: not in a scheme-less "///x".
	if rest, ok := strings.CutPrefix(raw, "//"); ok && (scheme != "" || !strings.HasPrefix(rest, "/")) {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return ""
		}
		return rest[i:]
	}
	return raw
}

// contentfulEscape percent-encodes (uppercase hex) every byte of s that is not an ASCII
// letter, digit or one of keep: JavaScript's encodeURI (keep ";,/?:@&=+$-_.!~*'()#") and
// querystring.escape (keep "-_.!~*'()") for valid UTF-8.
func contentfulEscape(s, keep string) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (c < 0x80 && strings.IndexByte(keep, c) >= 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	return b.String()
}

// contentfulCanonical writes the canonical request. names are the signed header names
// (lowercase, sorted, deduplicated, including the signed-headers and timestamp headers);
// value returns a header's value.
func contentfulCanonical(method, path string, names []string, value func(string) string, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(method + "\n" + path + "\n"))
		for i, n := range names {
			if i > 0 {
				mac.Write([]byte{';'})
			}
			mac.Write([]byte(n + ":" + strings.TrimSpace(value(n))))
		}
		mac.Write([]byte{'\n'})
		mac.Write(body)
	}
}

// contentfulNames is the sorted, deduplicated set of names plus the two headers always signed.
func contentfulNames(listed []string) []string {
	set := map[string]bool{contentfulSignedHeaders: true, contentfulTimestampHeader: true}
	for _, n := range listed {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			set[n] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func verifyContentful(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(contentfulSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", contentfulSignatureName)
	}
	sig, ok := decodeLowerHex(raw, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 64 lowercase hex digits", contentfulSignatureName)
	}
	tsRaw, _ := req.Headers.Get(contentfulTimestampHeader)
	ms, ok := parseUnixSeconds(strings.TrimSpace(tsRaw)) // the same digit syntax, in milliseconds
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header in unix milliseconds", contentfulTimestampName)
	}
	listed, ok := req.Headers.Get(contentfulSignedHeaders)
	if !ok || strings.TrimSpace(listed) == "" {
		return Result{}, Reject(ReasonMalformedSignature, "no %s header", contentfulSignedName)
	}
	names := contentfulNames(strings.Split(listed, ","))
	for _, n := range names {
		if _, ok := req.Headers.Get(n); !ok {
			return Result{}, Reject(ReasonMalformedSignature, "%s names a header the request lacks", contentfulSignedName)
		}
	}
	if req.URL == "" {
		return Result{}, Reject(ReasonMissingSignature, "the signature covers the request path, and no URL was forwarded")
	}
	path, ok := contentfulPath(req.URL)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "the forwarded URL does not parse, so the signed path is unknown")
	}
	value := func(n string) string {
		switch n {
		case contentfulSignedHeaders:
			return strings.Join(names, ",")
		case contentfulTimestampHeader:
			return strconv.FormatInt(ms, 10)
		}
		v, _ := req.Headers.Get(n)
		return v
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, contentfulCanonical(req.Method, path, names, value, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(contentfulSignatureName, 0, keys)
	}
	if err := checkGenericTime(time.UnixMilli(ms), p.Now, effectiveTolerance(p, contentfulDefaultTolerance)); err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: contentfulIdentity(req, names)}, nil
}

// contentfulIdentity is X-Contentful-Idempotency-Key when it is among the signed headers;
// otherwise "<X-Contentful-Topic>:" + the body's hash when the topic is among the signed
// headers, else the hash alone. A key outside the signed headers is not authenticated: anyone
// replaying a captured request within the tolerance could set another key and so make the
// replay a new event, processed twice; the body and the signed topic it falls back on cannot
// be changed without breaking the signature. The topic names
// the event (ContentManagement.[Type].[Action]) and is on every webhook request
// (https://www.contentful.com/developers/docs/webhooks/headers/), while the body need not tell
// events apart: a webhook's transformation may send a custom body
// (https://www.contentful.com/developers/docs/webhooks/transformations/), such as just the entry
// id, which is byte-identical when that entry is published and then unpublished; by the body
// alone the second event would be a DUPLICATE and lost. A retry keeps its topic and body. An
// unsigned topic stays out: anyone replaying a captured request within the tolerance could
// change it, and so make the replay a new event.
func contentfulIdentity(req *Request, signed []string) string {
	// Trimmed, as the canonical request trims it: padding would not break the signature.
	if key, _ := req.Headers.Get(contentfulIdempotency); slices.Contains(signed, contentfulIdempotency) {
		if key = strings.TrimSpace(key); key != "" {
			return key
		}
	}
	id := bodySHA256ID(req.Body)
	if !slices.Contains(signed, "x-contentful-topic") {
		return id
	}
	if topic, _ := req.Headers.Get("x-contentful-topic"); strings.TrimSpace(topic) != "" {
		return strings.TrimSpace(topic) + ":" + id
	}
	return id
}

// signContentful signs as Contentful does with the first secret (a space has one active
// signing secret), covering X-Contentful-Topic, which Sign also sends, and the two
// x-contentful headers. in.EventID, when set, is sent as X-Contentful-Idempotency-Key and
// signed too: Verify takes the key as the identity only when it is signed.
func signContentful(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("contentful: sign needs the signing secret")
	}
	key, err := parseContentfulSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("contentful: %w", err)
	}
	if in.URL == "" {
		return nil, errors.New("contentful: sign needs the URL (its path is signed)")
	}
	if in.Timestamp.IsZero() || in.Timestamp.UnixMilli() < 0 {
		return nil, errors.New("contentful: sign needs a timestamp at or after 1970")
	}
	path, ok := contentfulPath(in.URL)
	if !ok {
		return nil, errors.New("contentful: the URL does not parse")
	}
	method := in.Method
	if method == "" {
		method = "POST"
	}
	const topic = "ContentManagement.Entry.publish"
	listed := []string{"x-contentful-topic"}
	if in.EventID != "" {
		listed = append(listed, contentfulIdempotency)
	}
	names := contentfulNames(listed)
	ms := strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	value := func(n string) string {
		switch n {
		case contentfulSignedHeaders:
			return strings.Join(names, ",")
		case contentfulTimestampHeader:
			return ms
		case contentfulIdempotency:
			return in.EventID
		}
		return topic
	}
	sum := hmacSum(sha256.New, key, contentfulCanonical(method, path, names, value, in.Body))
	h := Headers{
		{Name: "Content-Type", Value: "application/vnd.contentful.management.v1+json"},
		{Name: "X-Contentful-Topic", Value: topic},
		{Name: contentfulTimestampHeader, Value: ms},
		{Name: contentfulSignedHeaders, Value: strings.Join(names, ",")},
		{Name: contentfulSignatureHeader, Value: hex.EncodeToString(sum)},
	}
	if in.EventID != "" {
		h = append(h, Header{Name: "X-Contentful-Idempotency-Key", Value: in.EventID})
	}
	return h, nil
}

// exampleContentfulSecret is 64 characters of hex, the length Contentful's secrets have.
func exampleContentfulSecret() (string, string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b)
	return s, s, nil
}
