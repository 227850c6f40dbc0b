package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Shared pieces of the providers that sign the raw body with an HMAC carried in one header
// (Shopify, PagerDuty, Typeform, Sentry, ...) and of those with a "t=...,v1=..." style header.
// Every name here is prefixed batchA so that other provider batches cannot clash with it.

// batchAEncoding is how a signature's bytes are written in its header.
type batchAEncoding int

const (
	batchAHex    batchAEncoding = iota // lowercase hex
	batchABase64                       // padded standard base64
)

// decode decodes s as size bytes in encoding e, strictly (see decodeLowerHex/decodeStdBase64).
func (e batchAEncoding) decode(s string, size int) ([]byte, bool) {
	if e == batchABase64 {
		return decodeStdBase64(s, size)
	}
	return decodeLowerHex(s, size)
}

func (e batchAEncoding) encode(b []byte) string {
	if e == batchABase64 {
		return base64.StdEncoding.EncodeToString(b)
	}
	return hex.EncodeToString(b)
}

func (e batchAEncoding) String() string {
	if e == batchABase64 {
		return "base64"
	}
	return "lowercase hex"
}

// batchABodyScheme is an HMAC over the raw request body, carried in one header.
type batchABodyScheme struct {
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
	enc     batchAEncoding
}

// batchABodySignatures is a parsed signature header.
type batchABodySignatures struct {
	header     string
	signatures [][]byte
	malformed  int
}

// parse finds and parses the signature header. Its errors are *Rejection.
func (s batchABodyScheme) parse(h Headers) (batchABodySignatures, error) {
	out := batchABodySignatures{}
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
			out.header, batchAPlural(out.malformed, "entry is", "entries are"), s.size, s.enc)
	}
	return out, Reject(ReasonMissingSignature, "%s has no %s= signature (%d of other versions are ignored)", out.header, s.version, others)
}

// authenticate checks req's body against keys and returns the matching key's id.
func (s batchABodyScheme) authenticate(req *Request, keys []Key) (string, error) {
	if req == nil {
		return "", Reject(ReasonMissingSignature, "no request")
	}
	sigs, err := s.parse(req.Headers)
	if err != nil {
		return "", err
	}
	keyID, ok := matchKey(keys, sigs.signatures, s.newHash, func(mac hash.Hash) { mac.Write(req.Body) })
	if !ok {
		return "", rejectNoMatch(sigs.header, sigs.malformed, keys)
	}
	return keyID, nil
}

// signature returns the header value for body under the keys: one "version=sig" entry per key
// for a list scheme, else only the first key's.
func (s batchABodyScheme) signature(body []byte, keys [][]byte) string {
	if !s.list && len(keys) > 1 {
		keys = keys[:1]
	}
	entries := make([]string, 0, len(keys))
	for _, k := range keys {
		sig := s.enc.encode(hmacSum(s.newHash, k, func(mac hash.Hash) { mac.Write(body) }))
		if s.version != "" {
			sig = s.version + "=" + sig
		}
		entries = append(entries, sig)
	}
	return strings.Join(entries, ",")
}

// batchAParseKeys parses every secret with parse, for Sign. It needs at least one.
func batchAParseKeys(provider string, secrets []string, parse func(string) ([]byte, error)) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%s: sign needs at least one secret", provider)
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: secret %d: %w", provider, i, err)
		}
		keys[i] = k
	}
	return keys, nil
}

// batchAStringSecret returns a ParseSecret for providers that key the HMAC with the secret's
// own bytes: it refuses an empty secret and one with surrounding whitespace (a copy-paste
// accident the provider never displays).
func batchAStringSecret(what string) func(string) ([]byte, error) {
	return func(secret string) ([]byte, error) {
		if secret == "" {
			return nil, invalidSecret("the " + what + " is empty")
		}
		if strings.TrimSpace(secret) != secret {
			return nil, invalidSecret("the " + what + " has leading or trailing whitespace")
		}
		return []byte(secret), nil
	}
}

// batchAHeaderID returns the first non-empty value among the named headers as the identity.
func batchAHeaderID(h Headers, names ...string) (string, error) {
	for _, n := range names {
		if v, _ := h.Get(n); v != "" {
			return v, nil
		}
	}
	return "", Reject(ReasonMissingEventID, "no %s header", strings.Join(names, " or "))
}

// batchAJSONString returns the non-empty string at path in a JSON object body (keys matched
// exactly, one level per path element).
func batchAJSONString(body []byte, path ...string) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return "", Reject(ReasonMalformedPayload, "body is not a JSON object")
	}
	name := strings.Join(path, ".")
	obj := top
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

// batchAKV is a parsed "k=v<sep>k=v" signature header with one timestamp key and a signature
// key that may repeat (Calendly, Paddle, WorkOS).
type batchAKV struct {
	// timestamp is the timestamp value as sent (digits only); it is signed verbatim.
	timestamp  string
	signatures [][]byte
	malformed  int
	others     int
}

// batchAParseKV parses v, the value of header, split on sep with surrounding spaces trimmed.
// Every element must be key=value; tsKey must appear exactly once as decimal digits; sigKey
// values that are not size bytes of lowercase hex are counted as malformed. Errors are *Rejection.
func batchAParseKV(header, v string, sep byte, tsKey, sigKey string, size int) (batchAKV, error) {
	var out batchAKV
	if strings.TrimSpace(v) == "" {
		return out, Reject(ReasonMalformedSignature, "%s is empty", header)
	}
	seenTS := false
	for _, part := range strings.Split(v, string(sep)) {
		part = strings.Trim(part, " ")
		key, value, ok := cutByte(part, '=')
		if !ok || key == "" || strings.IndexByte(value, '=') >= 0 {
			return out, Reject(ReasonMalformedSignature, "%s has an element that is not key=value", header)
		}
		switch key {
		case tsKey:
			if seenTS {
				return out, Reject(ReasonMalformedSignature, "%s has more than one %s", header, tsKey)
			}
			seenTS = true
			if _, ok := parseUnixSeconds(value); !ok {
				return out, Reject(ReasonMalformedSignature, "%s %s is not a decimal timestamp", header, tsKey)
			}
			out.timestamp = value
		case sigKey:
			sig, ok := decodeLowerHex(value, size)
			if !ok {
				out.malformed++
				continue
			}
			out.signatures = append(out.signatures, sig)
		default:
			out.others++
		}
	}
	if !seenTS {
		return out, Reject(ReasonMalformedSignature, "%s has no %s timestamp", header, tsKey)
	}
	if len(out.signatures) == 0 && out.malformed == 0 {
		return out, Reject(ReasonMissingSignature, "%s has no %s signature (%d element(s) of other schemes are ignored)", header, sigKey, out.others)
	}
	return out, nil
}

// batchAConcat writes parts and then body into the MAC, without copying the body.
func batchAConcat(body []byte, parts ...string) func(hash.Hash) {
	return func(mac hash.Hash) {
		for _, p := range parts {
			mac.Write([]byte(p))
		}
		mac.Write(body)
	}
}

// batchACheckMillis is checkTimestamp for a timestamp in unix milliseconds: accepted when it
// lies within tol of now in either direction, boundaries included.
func batchACheckMillis(ms int64, now time.Time, tol time.Duration) error {
	d := now.Sub(time.UnixMilli(ms)) // saturates instead of overflowing
	switch {
	case d > tol:
		return Reject(ReasonTimestampOutOfTolerance, "timestamp is %s old, more than the %s tolerance", batchAMillis(d), formatTolerance(tol))
	case d < -tol:
		return Reject(ReasonTimestampOutOfTolerance, "timestamp is %s in the future, more than the %s tolerance", batchAMillis(-d), formatTolerance(tol))
	}
	return nil
}

// batchAMillis prints a distance in whole milliseconds ("412.5s").
func batchAMillis(d time.Duration) string {
	return d.Truncate(time.Millisecond).String()
}

// batchASignTime checks a SignInput timestamp the way every timed Sign needs it.
func batchASignTime(provider string, t time.Time) error {
	if t.IsZero() || t.Unix() < 0 {
		return errors.New(provider + ": sign needs a timestamp at or after 1970")
	}
	return nil
}

func batchAPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// batchAExampleSecret makes an example secret: prefix + n random bytes in enc (base64 without
// padding characters when unpadded is set).
func batchAExampleSecret(prefix string, n int, enc func([]byte) string) func() (string, string, error) {
	return func() (string, string, error) {
		b, err := randomBytes(n)
		if err != nil {
			return "", "", err
		}
		s := prefix + enc(b)
		return s, s, nil
	}
}

// batchASvix returns the Standard Webhooks protocol re-described for a provider that delivers
// through Svix: verification is StandardWebhooks' own (webhook-* headers, else svix-*), and Sign
// sends the svix-* names Svix uses unless an account has white-labelled them.
func batchASvix(name, display, docs, retries string) *Protocol {
	p := StandardWebhooks()
	p.Name = name
	p.DisplayName = display
	p.SignatureScheme = `HMAC-SHA256 (base64) of "{svix-id}.{svix-timestamp}.{body}", svix-signature v1 (Svix)`
	p.IdentitySource = "svix-id header (webhook-id when white-labelled), the same on every retry"
	p.DocsURL = docs
	p.Retries = retries
	sign := p.Sign
	p.Sign = func(in SignInput, secrets []string) (Headers, error) {
		h, err := sign(in, secrets)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out := make(Headers, len(h))
		for i, f := range h {
			out[i] = Header{Name: "svix-" + strings.TrimPrefix(f.Name, "webhook-"), Value: f.Value}
		}
		return out, nil
	}
	return p
}

// batchASvixRetries is Svix's documented retry behaviour, shared by the providers using it.
const batchASvixRetries = "Svix retries a failed attempt (non-2xx, or no answer within 15 s) " +
	"immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h " +
	"(https://docs.svix.com/retries); every attempt is signed afresh with the time it is sent, " +
	"so svix-timestamp is never older than the attempt and the 300 s tolerance of the Svix " +
	"libraries (both directions) only has to absorb clock skew. svix-id stays the same on " +
	"every retry and on manual resends, so duplicates are recognised."

// batchAHexString is hex.EncodeToString, for batchAExampleSecret.
func batchAHexString(b []byte) string { return hex.EncodeToString(b) }

// batchABodyProvider is a provider that signs only the raw body (batchABodyScheme) and names
// its event in a header or in the body.
type batchABodyProvider struct {
	name   string
	scheme batchABodyScheme
	secret func(string) ([]byte, error)
	// identity extracts the event identity of an authenticated request.
	identity func(req *Request) (string, error)
	// extra returns the headers Sign adds beside the signature (the identity headers).
	extra func(in SignInput) (Headers, error)
}

// verify authenticates the body, then extracts the identity.
func (b batchABodyProvider) verify(req *Request, keys []Key, _ Params) (Result, error) {
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
func (b batchABodyProvider) sign(in SignInput, secrets []string) (Headers, error) {
	keys, err := batchAParseKeys(b.name, secrets, b.secret)
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

// batchAIDHeader returns an extra-headers function that sends in.EventID in the named header.
func batchAIDHeader(provider, name string) func(SignInput) (Headers, error) {
	return func(in SignInput) (Headers, error) {
		if in.EventID == "" {
			return nil, fmt.Errorf("%s: sign needs an EventID for %s", provider, name)
		}
		return Headers{{Name: name, Value: in.EventID}}, nil
	}
}

// batchABodyIdentity is an identity function reading the string at path in the JSON body.
func batchABodyIdentity(path ...string) func(*Request) (string, error) {
	return func(req *Request) (string, error) { return batchAJSONString(req.Body, path...) }
}

// batchABodyHashIdentity is the fallback identity for providers that send no event id.
func batchABodyHashIdentity(req *Request) (string, error) { return bodySHA256ID(req.Body), nil }

// batchAStdBase64 is base64.StdEncoding.EncodeToString, for batchAExampleSecret.
func batchAStdBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// batchATimedProvider is a provider whose header is "ts=<time><sep>sig=<hex>..." with the
// signature an HMAC-SHA256 of "<time><join><body>" (Calendly, Paddle, WorkOS).
type batchATimedProvider struct {
	name          string
	header        string
	sep           byte   // between elements
	signSep       string // what Sign writes between elements ("," or ", ")
	tsKey, sigKey string
	join          string // between the timestamp and the body in the signed message
	millis        bool   // the timestamp is unix milliseconds, not seconds
	tolerance     time.Duration
	secret        func(string) ([]byte, error)
	identity      func(*Request) (string, error)
}

// verify checks, in order: the header's presence and form, the signature, the timestamp
// against the tolerance (both directions), then the identity.
func (b batchATimedProvider) verify(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(b.header)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", b.header)
	}
	h, err := batchAParseKV(b.header, raw, b.sep, b.tsKey, b.sigKey, sha256.Size)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, h.signatures, sha256.New, batchAConcat(req.Body, h.timestamp, b.join))
	if !ok {
		return Result{}, rejectNoMatch(b.header, h.malformed, keys)
	}
	ts, _ := parseUnixSeconds(h.timestamp) // digits only, checked by the parser
	tol := effectiveTolerance(p, b.tolerance)
	if b.millis {
		err = batchACheckMillis(ts, p.Now, tol)
	} else {
		err = checkTimestamp(ts, p.Now, tol)
	}
	if err != nil {
		return Result{}, err
	}
	id, err := b.identity(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// sign writes the header with the timestamp and one signature under the first secret: these
// providers hold one secret per destination.
func (b batchATimedProvider) sign(in SignInput, secrets []string) (Headers, error) {
	keys, err := batchAParseKeys(b.name, secrets, b.secret)
	if err != nil {
		return nil, err
	}
	if err := batchASignTime(b.name, in.Timestamp); err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	if b.millis {
		ts = strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	}
	sig := hex.EncodeToString(hmacSum(sha256.New, keys[0], batchAConcat(in.Body, ts, b.join)))
	return Headers{{Name: b.header, Value: b.tsKey + "=" + ts + b.signSep + b.sigKey + "=" + sig}}, nil
}

// batchAQuote is s as a JSON string.
func batchAQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// batchAUUIDString writes 16 bytes as a UUID-shaped string (8-4-4-4-12 hex).
func batchAUUIDString(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) != 32 {
		return h
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// batchAQuery returns the query parameters of a request URL (absolute or a path). A query
// that does not parse is a malformed request.
func batchAQuery(rawURL string) (url.Values, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, Reject(ReasonMalformedPayload, "the request URL does not parse")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, Reject(ReasonMalformedPayload, "the request query does not parse")
	}
	return q, nil
}

// batchAEchoReply is a 200 text/plain reply echoing s, with nosniff so that a browser never
// renders the echoed, attacker-choosable text as anything but text.
func batchAEchoReply(s string) *Reply {
	return &Reply{
		Status: 200,
		Headers: Headers{
			{Name: "Content-Type", Value: "text/plain; charset=utf-8"},
			{Name: "X-Content-Type-Options", Value: "nosniff"},
		},
		Body: []byte(s),
	}
}

// batchAAlnum writes each random byte as one lowercase letter or digit, the look of Dropbox
// app secrets (the slight modulo bias is irrelevant for examples).
func batchAAlnum(b []byte) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = chars[int(c)%len(chars)]
	}
	return string(out)
}
