package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
// where path is the request target (path and query, as received) normalized as the official
// @contentful/node-apps-toolkit does (getNormalizedEncodedURI), and the headers are those named
// in x-contentful-signed-headers plus that header and x-contentful-timestamp (unix
// milliseconds), sorted by name. Verify reads them as the toolkit's verifyRequest does in a
// Node server: a listed name counts only as written in lowercase without spaces, a repeated
// header's values are joined as Node joins them (", "), values are trimmed.
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
// that is not 64 lowercase hex digits, or one sent twice (malformed signature); no
// x-contentful-timestamp, or one without leading decimal digits (after an optional '+'; read
// as JavaScript's parseInt does, what follows them ignored) or with more than 18 (missing
// timestamp); no x-contentful-signed-headers, one with fewer than two comma-separated
// entries, or one naming a header the request lacks (malformed signature); no URL forwarded
// (missing signature: the path is signed); no key matching (signature mismatch); the timestamp
// more than the tolerance from Now in either direction (the toolkit checks only age, default
// 30 s).
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
			"rejects requests older than 30 s by default. The 5-minute default here allows for clock skew both ways. " +
			"Contentful's default retry policy makes up to 2 more attempts 30 s apart (3 attempts within about a minute); a " +
			"custom policy (Early Access, Premium+) allows up to 99 retries over about 24 h " +
			"(https://www.contentful.com/developers/docs/webhooks/retry-policy/). Whether a retry is signed afresh was not " +
			"confirmed: one that reused an old signature would be rejected once older than the tolerance.",
		ParseSecret:   parseContentfulSecret,
		Verify:        verifyContentful,
		Sign:          signContentful,
		SignURL:       contentfulSignURL,
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

// contentfulPath is the request target of raw (what a Node server's req.url holds, which the
// toolkit's verifyRequest is given) normalized like the toolkit's getNormalizedEncodedURI:
// split at '?' (text after a second '?' is dropped, as JavaScript's destructuring of split
// does), the query escaped with querystring.escape, the whole with encodeURI. The target is
// taken byte for byte: an invalid percent-escape ("%zz") and a '#' are part of it, as they
// are of req.url, and both escapes encode '%' again.
func contentfulPath(raw string) (string, bool) {
	uri, ok := contentfulTarget(raw)
	if !ok {
		return "", false
	}
	parts := strings.Split(uri, "?")
	out := parts[0]
	if len(parts) > 1 && parts[1] != "" {
		out += "?" + contentfulEscape(parts[1], "-_.!~*'()")
	}
	return contentfulEscape(out, ";,/?:@&=+$-_.!~*'()#"), true
}

// contentfulTarget is the request target within raw, the URL forwarded (scheme, "//",
// authority, then the target as received) or a bare target: everything after the authority,
// unparsed, "/" when that is empty and with a "/" added before a bare query or '#'. It refuses a
// URL with an ASCII control character and one that is neither a path nor scheme "://"
// ("mailto:x"): no request line carries them.
func contentfulTarget(raw string) (string, bool) {
	for i := 0; i < len(raw); i++ {
		if raw[i] < 0x20 || raw[i] == 0x7f {
			return "", false
		}
	}
	rest, authority := raw, false
	if i := strings.IndexByte(raw, ':'); i > 0 && contentfulScheme(raw[:i]) {
		if rest = raw[i+1:]; !strings.HasPrefix(rest, "//") {
			return "", false
		}
		authority = true
	} else if !strings.HasPrefix(raw, "/") {
		return "", false
	} else if strings.HasPrefix(raw, "//") && !strings.HasPrefix(raw, "///") {
		authority = true // a network-path reference, "//host/path", as url.Parse reads it
	}
	if authority {
		rest = rest[2:]
		i := strings.IndexAny(rest, "/?#")
		if i < 0 {
			return "/", true
		}
		rest = rest[i:]
	}
	if !strings.HasPrefix(rest, "/") {
		rest = "/" + rest
	}
	return rest, true
}

// contentfulScheme reports whether s is a URL scheme: a letter, then letters, digits, '+', '-'
// or '.'.
func contentfulScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
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
		set[n] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// contentfulListed is what the toolkit's verifyRequest signs of an x-contentful-signed-headers
// value: its comma-separated entries, as they are, that can name a header of req.headers
// (whose names Node lowercases), so a lowercase header name. An entry with a space or a
// capital letter matches no header there and is not signed; neither is an empty one. ok is
// false when the value has fewer than two entries, which the toolkit refuses.
func contentfulListed(value string) (names []string, ok bool) {
	entries := strings.Split(value, ",")
	for _, e := range entries {
		if isHeaderName(e) && e == strings.ToLower(e) {
			names = append(names, e)
		}
	}
	return names, len(entries) >= 2
}

// contentfulHeader is the value a Node server's req.headers holds for the lowercase name, as
// the toolkit reads it (trimmed): Node joins a repeated header's values with ", ", a
// repeated Cookie's with "; ", and keeps the first of a header that may appear once
// (Content-Type, User-Agent, Authorization and the others of nodeSingleHeaders).
func contentfulHeader(h Headers, name string) (string, bool) {
	values := h.Values(name)
	if len(values) == 0 {
		return "", false
	}
	for i, v := range values {
		values[i] = strings.Trim(v, " \t") // the optional whitespace Node's parser strips
	}
	v := strings.Join(values, ", ")
	switch {
	case nodeSingleHeaders[name]:
		v = values[0]
	case name == "cookie":
		v = strings.Join(values, "; ")
	}
	return strings.TrimSpace(v), true
}

// nodeSingleHeaders are the headers of which Node's http server keeps the first value and
// discards repeats (the IncomingMessage.headers documentation, checked with Node 20).
var nodeSingleHeaders = map[string]bool{
	"age": true, "authorization": true, "content-length": true, "content-type": true, "etag": true,
	"expires": true, "from": true, "host": true, "if-modified-since": true, "if-unmodified-since": true,
	"last-modified": true, "location": true, "max-forwards": true, "proxy-authorization": true,
	"referer": true, "retry-after": true, "server": true, "user-agent": true,
}

// contentfulParseInt reads s as JavaScript's Number.parseInt(s, 10) does, which the toolkit
// applies to x-contentful-timestamp: an optional sign, then the leading decimal digits; what
// follows them is ignored. ok is false without digits, for a negative value and past 18 digits.
func contentfulParseInt(s string) (int64, bool) {
	s = strings.TrimPrefix(s, "+")
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 || n > 18 {
		return 0, false
	}
	v, err := strconv.ParseInt(s[:n], 10, 64)
	return v, err == nil
}

func verifyContentful(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := contentfulHeader(req.Headers, contentfulSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", contentfulSignatureName)
	}
	sig, ok := decodeLowerHex(raw, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 64 lowercase hex digits", contentfulSignatureName)
	}
	tsRaw, _ := contentfulHeader(req.Headers, contentfulTimestampHeader)
	ms, ok := contentfulParseInt(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header in unix milliseconds", contentfulTimestampName)
	}
	listedRaw, ok := contentfulHeader(req.Headers, contentfulSignedHeaders)
	if !ok || listedRaw == "" {
		return Result{}, Reject(ReasonMalformedSignature, "no %s header", contentfulSignedName)
	}
	listed, ok := contentfulListed(listedRaw)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s names fewer than two headers", contentfulSignedName)
	}
	names := contentfulNames(listed)
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
		v, _ := contentfulHeader(req.Headers, n)
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
	if key, _ := contentfulHeader(req.Headers, contentfulIdempotency); slices.Contains(signed, contentfulIdempotency) {
		if key != "" {
			return key
		}
	}
	id := bodySHA256ID(req.Body)
	if !slices.Contains(signed, "x-contentful-topic") {
		return id
	}
	if topic, _ := contentfulHeader(req.Headers, "x-contentful-topic"); topic != "" {
		return topic + ":" + id
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

// contentfulSignURL is the URL Contentful calls for in.URL: without its fragment, which an
// HTTP client never sends, so the request target that reaches Verify (taken byte for byte,
// as req.url in Node) holds none. Signed over the URL as given, a delivery printed by
// `hookverify sign --url https://host/hooks/ep#x` and sent with curl was rejected.
func contentfulSignURL(in SignInput, _ []string) (string, error) {
	u, _, _ := strings.Cut(in.URL, "#")
	return u, nil
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
