package protocol

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// generic-hmac verifies any "HMAC of some request parts in some header" scheme, described
// entirely by the endpoint's options. See GenericHMAC for the options.
const (
	genericHMACName             = "generic-hmac"
	genericHMACDefaultHeader    = "X-Signature"
	genericHMACDefaultTemplate  = "{body}"
	genericHMACDefaultTolerance = 300 * time.Second
	// genericHMACMaxTolerance caps option tolerance as server.MaxTolerance caps an endpoint's
	// own: the option overrides that tolerance, and a window longer than the dedupe window
	// would let a captured delivery be accepted again once its claim has expired.
	genericHMACMaxTolerance = 7 * 24 * time.Hour
)

// Option names of generic-hmac.
const (
	genericOptHeader          = "header"
	genericOptPrefix          = "prefix"
	genericOptList            = "list"
	genericOptScheme          = "scheme"
	genericOptAlgorithm       = "algorithm"
	genericOptEncoding        = "encoding"
	genericOptKey             = "key"
	genericOptTemplate        = "template"
	genericOptTimestampHeader = "timestamp_header"
	genericOptTimestampKey    = "timestamp_key"
	genericOptTimestampUnit   = "timestamp_unit"
	genericOptTolerance       = "tolerance"
)

var genericHMACOptions = []string{
	genericOptHeader, genericOptPrefix, genericOptList, genericOptScheme, genericOptAlgorithm,
	genericOptEncoding, genericOptKey, genericOptTemplate, genericOptTimestampHeader,
	genericOptTimestampKey, genericOptTimestampUnit, genericOptTolerance, genericOptIDHeader,
	genericOptIDPointer,
}

// GenericHMAC returns the protocol for senders whose HMAC scheme is not built in. Every
// detail comes from the endpoint's options; with no options an endpoint expects
// X-Signature: <lowercase hex HMAC-SHA256 of the raw body> keyed with the secret's bytes, and
// takes the SHA-256 of the body as the event identity.
//
// Options (all optional; ValidateOptions refuses an inconsistent set, naming the option):
//
//   - header: the signature header (default X-Signature).
//   - prefix: text before each signature, such as "sha256=" or "v1," (default none).
//     Entries of a list that lack it are taken as other signature versions and ignored.
//   - list: how several signatures share the header: "none" (default: the whole value is one
//     signature), "comma" (comma-separated, spaces around entries ignored), "space"
//     (space-separated, as Standard Webhooks), or "kv" (comma-separated key=value pairs such as
//     "t=1700000000,v1=<sig>,v1=<sig>", as Stripe).
//   - scheme: with list=kv, the key whose values are signatures ("v1"); other keys are ignored.
//   - algorithm: sha1, sha256 (default) or sha512.
//   - encoding: hex (default; lowercase), base64 (standard alphabet, padded) or base64url
//     (URL-safe alphabet, unpadded).
//   - key: how a secret becomes the HMAC key: raw (default: its bytes), hex, base64 (standard,
//     padding optional) or whsec (an optional "whsec_" prefix, then base64). Secrets are stored
//     as given and decoded when a delivery is verified; one that does not decode under this
//     option is refused when it is added (CheckSecret).
//   - template: the signed content, literal text and placeholders: {body} (the raw body,
//     required exactly once), {timestamp} (the timestamp exactly as received), {id} (the
//     id_header value), {url} (the URL the provider called, or the endpoint's public_url),
//     {method} (the HTTP method as received), {header:Name} (the first value of that header,
//     which must be present). "{{" and "}}" stand for literal braces. Default "{body}"; for
//     example "{timestamp}.{body}" or "{id}.{timestamp}.{body}".
//   - timestamp_header: the header carrying the signed timestamp; or timestamp_key, with
//     list=kv, the key carrying it inside the signature header ("t"). Exactly one is required
//     when the template uses {timestamp}, and neither is allowed otherwise.
//   - timestamp_unit: s (default: unix seconds), ms (unix milliseconds) or rfc3339.
//   - tolerance: a Go duration ("5m"), at most 7 days as an endpoint's own, for the timestamp
//     check, overriding the endpoint's tolerance; without it the endpoint's applies, else 5
//     minutes. The timestamp is checked in both directions, after the signature, and only
//     when the template uses {timestamp}.
//   - id_header: the header carrying the event identity; or id_pointer, an RFC 6901 JSON
//     pointer ("/event/id") to a string or number in the body. Neither: "body-sha256:" and the
//     hex SHA-256 of the raw body. {id} in the template requires id_header.
//
// Verify rejects, in this order: no signature header (missing signature); an empty header, no
// well-formed signature, or only other versions when some entry was unparseable (malformed
// signature); only entries of other versions or schemes (missing signature); a signed part
// absent — timestamp (missing timestamp; also when it does not parse in its unit; malformed
// signature when it belongs in the signature header under timestamp_key), id header
// (missing event id), URL not forwarded or a {header:Name} header absent (missing signature);
// no signature matching a key (malformed signature if some entry was unparseable, else
// signature mismatch); the timestamp out of tolerance; the identity missing (missing event
// id) or the body not JSON when id_pointer is set (malformed payload). Options that
// ValidateOptions would refuse make Verify fail with a plain error, not a rejection.
func GenericHMAC() *Protocol {
	return &Protocol{
		Name:            genericHMACName,
		DisplayName:     "Generic HMAC",
		SignatureScheme: "HMAC (sha1/sha256/sha512, hex/base64) of an option-defined template, default hex HMAC-SHA256 of the body in X-Signature",
		// Whether a timestamp is signed depends on the options, so the static answer is no.
		SignsTimestamp: false,
		IdentitySource: `option id_header (a header) or id_pointer (RFC 6901 JSON pointer into the body); default "body-sha256:" + hex SHA-256 of the raw body`,
		// The URL is signed only when the template uses {url}; true lets the endpoint set
		// public_url, and an edge that always forwards the URL loses nothing.
		NeedsURL: true,
		DocsURL:  "https://datatracker.ietf.org/doc/html/rfc2104",
		Retries: "Depends on the sender. With the default options nothing is timed, so late retries are accepted; " +
			"when the template signs {timestamp}, retries that reuse the original signature are rejected once older " +
			"than the tolerance (option tolerance, else the endpoint's, else 5 minutes): raise it to the sender's retry span in that case.",
		ParseSecret:     parseGenericHMACSecret,
		ValidateOptions: validateGenericHMACOptions,
		CheckSecret:     checkGenericHMACSecret,
		OptionTolerance: genericHMACTolerance,
		Verify:          verifyGenericHMAC,
		Sign:            signGenericHMAC,
		ExampleSecret:   sharedExample(""),
	}
}

// parseGenericHMACSecret keeps the secret as typed; decoding per option key happens in Verify.
func parseGenericHMACSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the generic-hmac secret is empty")
	}
	if strings.TrimSpace(secret) != secret {
		return nil, invalidSecret("the generic-hmac secret has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// checkGenericHMACSecret returns the key the endpoint's key option reads the secret as, and
// refuses a secret that it cannot decode: it would never match a signature, and a rotation to
// it would end the secret that does.
func checkGenericHMACSecret(secret string, options map[string]string) ([]byte, error) {
	c, err := parseGenericHMACConfig(options)
	if err != nil {
		return nil, err
	}
	key, ok := c.decodeKey([]byte(secret))
	if !ok {
		return nil, invalidSecret("the secret does not decode as the endpoint's option " + genericOptKey + "=" + c.key + " says")
	}
	return key, nil
}

// genericPartKind is one kind of template part.
type genericPartKind int

const (
	genericLiteral genericPartKind = iota
	genericBody
	genericTimestamp
	genericID
	genericURL
	genericMethod
	genericHeader
)

// genericPart is a literal (text) or a placeholder ({header:Name} keeps Name in text).
type genericPart struct {
	kind genericPartKind
	text string
}

var genericPlaceholders = map[string]genericPartKind{
	"body": genericBody, "timestamp": genericTimestamp, "id": genericID, "url": genericURL, "method": genericMethod,
}

// NamedHeader is a header an endpoint option tells a protocol to read.
type NamedHeader struct {
	Option, Header string
}

// HeadersNamed returns the headers options tell a protocol to read: the values of the options
// "header" and "*_header", and the {header:NAME} placeholders of a generic-hmac "template"
// (as the template is parsed: "{{header:X}}" is literal text). Options a protocol would refuse
// give what can be read of them.
func HeadersNamed(options map[string]string) []NamedHeader {
	var named []NamedHeader
	for k, v := range options {
		switch {
		case k == genericOptHeader || strings.HasSuffix(k, "_header"):
			named = append(named, NamedHeader{k, v})
		case k == genericOptTemplate:
			parts, _ := parseGenericTemplate(v)
			for _, part := range parts {
				if part.kind == genericHeader {
					named = append(named, NamedHeader{k, part.text})
				}
			}
		}
	}
	return named
}

// parseGenericTemplate parses a signed-content template. Errors never quote the template.
func parseGenericTemplate(t string) ([]genericPart, error) {
	var parts []genericPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, genericPart{kind: genericLiteral, text: lit.String()})
			lit.Reset()
		}
	}
	bodies := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '{' && i+1 < len(t) && t[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(t) && t[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, fmt.Errorf("a lone '}' at byte %d (write }} for a literal brace)", i)
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("the '{' at byte %d is not closed", i)
			}
			name := t[i+1 : i+end]
			flush()
			if h, ok := strings.CutPrefix(name, "header:"); ok {
				if !isHeaderName(h) {
					return nil, fmt.Errorf("the {header:...} placeholder at byte %d does not name a valid header", i)
				}
				parts = append(parts, genericPart{kind: genericHeader, text: h})
			} else if kind, ok := genericPlaceholders[name]; ok {
				if kind == genericBody {
					bodies++
				}
				parts = append(parts, genericPart{kind: kind})
			} else {
				return nil, fmt.Errorf("unknown placeholder at byte %d (known: {body}, {timestamp}, {id}, {url}, {method}, {header:Name})", i)
			}
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	if bodies != 1 {
		return nil, fmt.Errorf("must contain {body} exactly once (found %d), so that the body is authenticated", bodies)
	}
	return parts, nil
}

// renderGenericTemplate writes parts back in template syntax.
func renderGenericTemplate(parts []genericPart) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.kind {
		case genericLiteral:
			b.WriteString(strings.NewReplacer("{", "{{", "}", "}}").Replace(p.text))
		case genericHeader:
			b.WriteString("{header:" + p.text + "}")
		default:
			for name, k := range genericPlaceholders {
				if k == p.kind {
					b.WriteString("{" + name + "}")
				}
			}
		}
	}
	return b.String()
}

// genericHMACConfig is a validated option set.
type genericHMACConfig struct {
	header       string
	prefix       string
	list         string
	scheme       string
	newHash      func() hash.Hash
	size         int
	encoding     string
	key          string
	template     []genericPart
	tsHeader     string
	tsKey        string
	tsUnit       string
	tolerance    time.Duration // zero: the endpoint's
	identity     genericIdentity
	usesTS       bool
	usesID       bool
	usesURL      bool
	extraHeaders []string
}

func validateGenericHMACOptions(options map[string]string) error {
	c, err := parseGenericHMACConfig(options)
	if err != nil {
		return err
	}
	// Refused here rather than in the parser, so that a row stored before the cap still
	// verifies (under the cap, see verifyGenericHMAC) instead of failing every delivery. Such
	// a row is sent back as stored by every update made from a read of it (endpoint update
	// --disabled, say), which this then refuses: the message says so, and how to go on.
	if c.tolerance > genericHMACMaxTolerance {
		return fmt.Errorf("option %s must be at most %s, the cap on an endpoint's tolerance (got %q); "+
			"an endpoint stored with more before the cap is already held to %s, and takes an update "+
			"only with its options given again, %s at most that",
			genericOptTolerance, genericHMACMaxTolerance, options[genericOptTolerance],
			genericHMACMaxTolerance, genericOptTolerance)
	}
	return nil
}

// genericHMACTolerance is Protocol.OptionTolerance: a timestamp is checked only when the
// template signs {timestamp}, within option tolerance (capped as Verify caps it) if set.
func genericHMACTolerance(options map[string]string) (time.Duration, bool) {
	c, err := parseGenericHMACConfig(options)
	if err != nil || !c.usesTS {
		return 0, false
	}
	return min(c.tolerance, genericHMACMaxTolerance), true
}

// parseGenericHMACConfig applies defaults and checks the options. Every error names the option.
func parseGenericHMACConfig(o map[string]string) (*genericHMACConfig, error) {
	if err := genericUnknownOption(o, genericHMACOptions...); err != nil {
		return nil, err
	}
	get := func(name, def string) (string, bool) {
		v, ok := o[name]
		if !ok {
			return def, false
		}
		return v, true
	}
	c := &genericHMACConfig{}
	c.header, _ = get(genericOptHeader, genericHMACDefaultHeader)
	if !isHeaderName(c.header) {
		return nil, fmt.Errorf("option %s must be an HTTP header name", genericOptHeader)
	}
	c.list, _ = get(genericOptList, "none")
	switch c.list {
	case "none", "comma", "space", "kv":
	default:
		return nil, fmt.Errorf("option %s must be none, comma, space or kv (got %q)", genericOptList, c.list)
	}
	prefix, hasPrefix := get(genericOptPrefix, "")
	c.prefix = prefix
	switch {
	case hasPrefix && c.list == "kv":
		return nil, fmt.Errorf("option %s does not apply to list=kv (the %s option names the signature key)", genericOptPrefix, genericOptScheme)
	case hasPrefix && prefix == "":
		return nil, fmt.Errorf("option %s is empty (omit it for no prefix)", genericOptPrefix)
	case c.list == "comma" && strings.Contains(prefix, ","):
		return nil, fmt.Errorf("option %s cannot contain ',' with list=comma", genericOptPrefix)
	case c.list == "space" && strings.Contains(prefix, " "):
		return nil, fmt.Errorf("option %s cannot contain ' ' with list=space", genericOptPrefix)
	}
	scheme, hasScheme := get(genericOptScheme, "")
	switch {
	case c.list == "kv" && !hasScheme:
		return nil, fmt.Errorf("option %s is required with list=kv", genericOptScheme)
	case c.list != "kv" && hasScheme:
		return nil, fmt.Errorf("option %s applies only to list=kv", genericOptScheme)
	case hasScheme && (scheme == "" || strings.ContainsAny(scheme, ",= ")):
		return nil, fmt.Errorf("option %s must be a non-empty key without ',', '=' or spaces", genericOptScheme)
	}
	c.scheme = scheme
	alg, _ := get(genericOptAlgorithm, "sha256")
	switch alg {
	case "sha1":
		c.newHash, c.size = sha1.New, sha1.Size
	case "sha256":
		c.newHash, c.size = sha256.New, sha256.Size
	case "sha512":
		c.newHash, c.size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("option %s must be sha1, sha256 or sha512 (got %q)", genericOptAlgorithm, alg)
	}
	c.encoding, _ = get(genericOptEncoding, "hex")
	switch c.encoding {
	case "hex", "base64", "base64url":
	default:
		return nil, fmt.Errorf("option %s must be hex, base64 or base64url (got %q)", genericOptEncoding, c.encoding)
	}
	c.key, _ = get(genericOptKey, "raw")
	switch c.key {
	case "raw", "hex", "base64", "whsec":
	default:
		return nil, fmt.Errorf("option %s must be raw, hex, base64 or whsec (got %q)", genericOptKey, c.key)
	}
	tmpl, _ := get(genericOptTemplate, genericHMACDefaultTemplate)
	parts, err := parseGenericTemplate(tmpl)
	if err != nil {
		return nil, fmt.Errorf("option %s: %v", genericOptTemplate, err)
	}
	c.template = parts
	for _, p := range parts {
		switch p.kind {
		case genericTimestamp:
			c.usesTS = true
		case genericID:
			c.usesID = true
		case genericURL:
			c.usesURL = true
		case genericHeader:
			c.extraHeaders = append(c.extraHeaders, p.text)
		}
	}
	tsHeader, hasTSHeader := get(genericOptTimestampHeader, "")
	tsKey, hasTSKey := get(genericOptTimestampKey, "")
	switch {
	case hasTSHeader && hasTSKey:
		return nil, fmt.Errorf("options %s and %s are mutually exclusive", genericOptTimestampHeader, genericOptTimestampKey)
	case c.usesTS && !hasTSHeader && !hasTSKey:
		return nil, fmt.Errorf("option %s uses {timestamp}: set %s (or %s with list=kv)", genericOptTemplate, genericOptTimestampHeader, genericOptTimestampKey)
	case !c.usesTS && (hasTSHeader || hasTSKey):
		return nil, fmt.Errorf("option %s or %s is set but option %s has no {timestamp}, so the timestamp would not be signed", genericOptTimestampHeader, genericOptTimestampKey, genericOptTemplate)
	case hasTSHeader && !isHeaderName(tsHeader):
		return nil, fmt.Errorf("option %s must be an HTTP header name", genericOptTimestampHeader)
	case hasTSKey && c.list != "kv":
		return nil, fmt.Errorf("option %s applies only to list=kv", genericOptTimestampKey)
	case hasTSKey && (tsKey == "" || tsKey == scheme || strings.ContainsAny(tsKey, ",= ")):
		return nil, fmt.Errorf("option %s must be a non-empty key without ',', '=' or spaces, other than the scheme", genericOptTimestampKey)
	}
	c.tsHeader, c.tsKey = tsHeader, tsKey
	unit, hasUnit := get(genericOptTimestampUnit, "s")
	switch {
	case hasUnit && !c.usesTS:
		return nil, fmt.Errorf("option %s is set but option %s has no {timestamp}", genericOptTimestampUnit, genericOptTemplate)
	case unit != "s" && unit != "ms" && unit != "rfc3339":
		return nil, fmt.Errorf("option %s must be s, ms or rfc3339 (got %q)", genericOptTimestampUnit, unit)
	}
	c.tsUnit = unit
	if tol, ok := o[genericOptTolerance]; ok {
		if !c.usesTS {
			return nil, fmt.Errorf("option %s is set but option %s has no {timestamp}", genericOptTolerance, genericOptTemplate)
		}
		d, err := time.ParseDuration(tol)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("option %s must be a positive Go duration such as 5m (got %q)", genericOptTolerance, tol)
		}
		c.tolerance = d
	}
	c.identity, err = parseGenericIdentity(o)
	if err != nil {
		return nil, err
	}
	if c.usesID && c.identity.header == "" {
		return nil, fmt.Errorf("option %s uses {id}: set %s", genericOptTemplate, genericOptIDHeader)
	}
	return c, nil
}

// decodeSig decodes one signature in the configured encoding and exact size.
func (c *genericHMACConfig) decodeSig(s string) ([]byte, bool) {
	switch c.encoding {
	case "hex":
		return decodeLowerHex(s, c.size)
	case "base64":
		return decodeStdBase64(s, c.size)
	}
	if len(s) != base64.RawURLEncoding.EncodedLen(c.size) || strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != c.size {
		return nil, false
	}
	return b, true
}

func (c *genericHMACConfig) encodeSig(b []byte) string {
	switch c.encoding {
	case "hex":
		return hex.EncodeToString(b)
	case "base64":
		return base64.StdEncoding.EncodeToString(b)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeKey turns a stored secret into the HMAC key per option key.
func (c *genericHMACConfig) decodeKey(secret []byte) ([]byte, bool) {
	s := string(secret)
	var out []byte
	var err error
	switch c.key {
	case "raw":
		return secret, len(secret) > 0
	case "hex":
		out, err = hex.DecodeString(s)
	case "whsec":
		s = strings.TrimPrefix(s, "whsec_")
		fallthrough
	case "base64":
		out, err = base64.StdEncoding.DecodeString(s)
		if err != nil {
			out, err = base64.RawStdEncoding.DecodeString(s)
		}
	}
	return out, err == nil && len(out) > 0
}

// genericHMACHeader is a parsed signature header.
type genericHMACHeader struct {
	signatures [][]byte
	malformed  int
	others     int
	timestamp  string // the timestamp_key value, verbatim
	hasTS      bool
}

// parseGenericHMACHeader parses the signature header value v. Its errors are *Rejection.
func (c *genericHMACConfig) parseHeader(v string) (genericHMACHeader, error) {
	var h genericHMACHeader
	if v == "" {
		return h, Reject(ReasonMalformedSignature, "%s is empty", c.header)
	}
	entry := func(e string) {
		if c.prefix != "" {
			rest, ok := strings.CutPrefix(e, c.prefix)
			if !ok {
				h.others++
				return
			}
			e = rest
		}
		if sig, ok := c.decodeSig(e); ok {
			h.signatures = append(h.signatures, sig)
		} else {
			h.malformed++
		}
	}
	switch c.list {
	case "none":
		entry(v)
	case "comma":
		for _, e := range strings.Split(v, ",") {
			entry(strings.Trim(e, " \t"))
		}
	case "space":
		for _, e := range strings.Split(v, " ") {
			if e != "" {
				entry(e)
			}
		}
	case "kv":
		for _, pair := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(strings.Trim(pair, " \t"), "=")
			switch {
			case !ok:
				h.malformed++
			case k == c.scheme:
				if sig, ok := c.decodeSig(val); ok {
					h.signatures = append(h.signatures, sig)
				} else {
					h.malformed++
				}
			case c.tsKey != "" && k == c.tsKey:
				if h.hasTS {
					return h, Reject(ReasonMalformedSignature, "%s has more than one %s", c.header, c.tsKey)
				}
				h.timestamp, h.hasTS = val, true
			default:
				h.others++
			}
		}
	}
	switch {
	case len(h.signatures) > 0:
		return h, nil
	case h.malformed > 0:
		return h, Reject(ReasonMalformedSignature, "%s has no well-formed signature (%d unparseable)", c.header, h.malformed)
	}
	return h, Reject(ReasonMissingSignature, "%s has no signature of the configured scheme (%d entries of other schemes are ignored)", c.header, h.others)
}

// parseTimestamp reads a timestamp in the configured unit.
func (c *genericHMACConfig) parseTimestamp(s string) (time.Time, bool) {
	switch c.tsUnit {
	case "ms":
		v, ok := parseUnixSeconds(s) // the same digit syntax
		if !ok {
			return time.Time{}, false
		}
		return time.UnixMilli(v), true
	case "rfc3339":
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	v, ok := parseUnixSeconds(s)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}

func (c *genericHMACConfig) formatTimestamp(t time.Time) string {
	switch c.tsUnit {
	case "ms":
		return strconv.FormatInt(t.UnixMilli(), 10)
	case "rfc3339":
		return t.UTC().Format(time.RFC3339Nano)
	}
	return strconv.FormatInt(t.Unix(), 10)
}

// genericSigned holds the request values the template refers to.
type genericSigned struct {
	body      []byte
	timestamp string
	id        string
	url       string
	method    string
	headers   Headers
}

func (c *genericHMACConfig) message(v genericSigned) func(hash.Hash) {
	return func(mac hash.Hash) {
		for _, p := range c.template {
			switch p.kind {
			case genericLiteral:
				mac.Write([]byte(p.text))
			case genericBody:
				mac.Write(v.body)
			case genericTimestamp:
				mac.Write([]byte(v.timestamp))
			case genericID:
				mac.Write([]byte(v.id))
			case genericURL:
				mac.Write([]byte(v.url))
			case genericMethod:
				mac.Write([]byte(v.method))
			case genericHeader:
				h, _ := v.headers.Get(p.text)
				mac.Write([]byte(h))
			}
		}
	}
}

// checkGenericTime checks t against now within tol in both directions, boundaries included,
// with details in the form checkTimestamp uses.
func checkGenericTime(t, now time.Time, tol time.Duration) error {
	d := now.Sub(t) // saturates rather than overflowing
	switch {
	case d > tol:
		return Reject(ReasonTimestampOutOfTolerance, "timestamp is %ds old, more than the %s tolerance",
			ceilSeconds(d), formatTolerance(tol))
	case d < -tol:
		// t.Sub(now), not -d: negating a saturated minimum Duration overflows back to itself.
		return Reject(ReasonTimestampOutOfTolerance, "timestamp is %ds in the future, more than the %s tolerance",
			ceilSeconds(t.Sub(now)), formatTolerance(tol))
	}
	return nil
}

func verifyGenericHMAC(req *Request, keys []Key, p Params) (Result, error) {
	c, err := parseGenericHMACConfig(p.Options)
	if err != nil {
		return Result{}, fmt.Errorf("generic-hmac: the endpoint's options are invalid: %w", err)
	}
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(c.header)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", c.header)
	}
	h, err := c.parseHeader(raw)
	if err != nil {
		return Result{}, err
	}
	v := genericSigned{body: req.Body, url: req.URL, method: req.Method, headers: req.Headers}
	var ts time.Time
	if c.usesTS {
		src, have := h.timestamp, h.hasTS
		name := c.header + " " + c.tsKey
		if c.tsHeader != "" {
			src, have = req.Headers.Get(c.tsHeader)
			name = c.tsHeader
		}
		// A timestamp inside the signature header is part of that header's syntax (as
		// Stripe's t), so its absence or bad form makes the header malformed.
		reason := ReasonMalformedSignature
		if c.tsHeader != "" {
			reason = ReasonMissingTimestamp
		}
		if !have || src == "" {
			return Result{}, Reject(reason, "no %s timestamp", name)
		}
		if ts, ok = c.parseTimestamp(src); !ok {
			return Result{}, Reject(reason, "%s is not a timestamp in unit %s", name, c.tsUnit)
		}
		v.timestamp = src
	}
	if c.usesID {
		if v.id, _ = req.Headers.Get(c.identity.header); v.id == "" {
			return Result{}, Reject(ReasonMissingEventID, "no %s header (it is signed)", c.identity.header)
		}
	}
	if c.usesURL && req.URL == "" {
		return Result{}, Reject(ReasonMissingSignature, "the signature covers the URL, and none was forwarded")
	}
	for _, name := range c.extraHeaders {
		if _, ok := req.Headers.Get(name); !ok {
			return Result{}, Reject(ReasonMissingSignature, "no %s header (it is signed)", name)
		}
	}
	decoded := make([]Key, 0, len(keys))
	undecodable := 0
	for _, k := range keys {
		if m, ok := c.decodeKey(k.Material); ok {
			decoded = append(decoded, Key{ID: k.ID, Material: m})
		} else if len(k.Material) > 0 {
			undecodable++
		}
	}
	keyID, ok := matchKey(decoded, h.signatures, c.newHash, c.message(v))
	if !ok {
		if h.malformed == 0 && len(decoded) == 0 && undecodable > 0 {
			return Result{}, Reject(ReasonSignatureMismatch, "no configured secret decodes under option %s=%s, so no signature in %s can match", genericOptKey, c.key, c.header)
		}
		return Result{}, rejectNoMatch(c.header, h.malformed, decoded)
	}
	if c.usesTS {
		tol := min(c.tolerance, genericHMACMaxTolerance) // a row stored before the cap
		if tol == 0 {
			tol = effectiveTolerance(p, genericHMACDefaultTolerance)
		}
		if err := checkGenericTime(ts, p.Now, tol); err != nil {
			return Result{}, err
		}
	}
	id, err := c.identity.eventID(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// signGenericHMAC signs per in.Options: one signature per secret where the list syntax holds
// several (comma, space, kv), else secrets[0] only. It sends the timestamp header and the
// id_header (in.EventID) when the options name them. A {header:Name} part other than those
// two cannot be invented, so it is an error.
func signGenericHMAC(in SignInput, secrets []string) (Headers, error) {
	c, err := parseGenericHMACConfig(in.Options)
	if err != nil {
		return nil, fmt.Errorf("generic-hmac: %w", err)
	}
	if len(secrets) == 0 {
		return nil, errors.New("generic-hmac: sign needs at least one secret")
	}
	if c.list == "none" {
		secrets = secrets[:1]
	}
	var out Headers
	v := genericSigned{body: in.Body, url: in.URL, method: in.Method}
	if v.method == "" {
		v.method = "POST"
	}
	if c.usesTS {
		if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
			return nil, errors.New("generic-hmac: sign needs a timestamp at or after 1970")
		}
		v.timestamp = c.formatTimestamp(in.Timestamp)
		if c.tsHeader != "" {
			out = append(out, Header{Name: c.tsHeader, Value: v.timestamp})
		}
	}
	if c.identity.header != "" {
		if in.EventID == "" {
			return nil, fmt.Errorf("generic-hmac: %w for the %s header", ErrSignNeedsEventID, c.identity.header)
		}
		v.id = in.EventID
		out = append(out, Header{Name: c.identity.header, Value: in.EventID})
	}
	if c.usesURL && in.URL == "" {
		return nil, errors.New("generic-hmac: the template signs {url}, and sign was given none")
	}
	for _, name := range c.extraHeaders {
		if _, ok := out.Get(name); !ok {
			return nil, fmt.Errorf("generic-hmac: the template signs header %s, whose value sign cannot know", name)
		}
	}
	v.headers = out
	sigs := make([]string, 0, len(secrets))
	for i, s := range secrets {
		raw, err := parseGenericHMACSecret(s)
		if err != nil {
			return nil, fmt.Errorf("generic-hmac: secret %d: %w", i, err)
		}
		key, ok := c.decodeKey(raw)
		if !ok {
			return nil, fmt.Errorf("generic-hmac: secret %d does not decode under option %s=%s", i, genericOptKey, c.key)
		}
		sig := c.encodeSig(hmacSum(c.newHash, key, c.message(v)))
		if c.list == "kv" {
			sigs = append(sigs, c.scheme+"="+sig)
		} else {
			sigs = append(sigs, c.prefix+sig)
		}
	}
	var value string
	switch c.list {
	case "space":
		value = strings.Join(sigs, " ")
	case "kv":
		if c.tsKey != "" {
			sigs = append([]string{c.tsKey + "=" + v.timestamp}, sigs...)
		}
		value = strings.Join(sigs, ",")
	default:
		value = strings.Join(sigs, ",")
	}
	return append(out, Header{Name: c.header, Value: value}), nil
}
