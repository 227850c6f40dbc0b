package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"sort"
	"strings"

	"github.com/hookverify/hookverify/internal/ascii"
)

// Twilio signs every webhook with X-Twilio-Signature: base64 HMAC-SHA1, keyed with the account
// Auth Token, of the full URL Twilio requested followed, for a form POST, by every POST
// parameter as name+value with names sorted and no separators. A JSON body is not signed
// directly: Twilio appends bodySHA256=<hex SHA-256 of the body> to the URL, signs the URL
// alone, and the body is checked against that hash. Nothing is timed.
const (
	twilioName            = "twilio"
	twilioSignatureHeader = "X-Twilio-Signature"
	twilioBodyHashParam   = "bodySHA256"
	// twilioIdempotencyHeader is sent by Twilio on webhook requests; it is not signed.
	twilioIdempotencyHeader = "I-Twilio-Idempotency-Token"
)

// Twilio returns the protocol for Twilio webhooks (Messaging, Voice, Studio, ... status and
// incoming callbacks) signed with the account Auth Token.
//
// The URL is part of the signed message, so the request URL (or the endpoint's public_url)
// must be the URL configured at Twilio, query included. Like twilio-python, twilio-node and
// twilio-go, Verify accepts the signature over the URL as received with its port removed or,
// when it has none, with the scheme's default port (443 for https, 80 otherwise) added, "since
// signature generation on the back end is inconsistent" (the SDKs' words). Only when none of
// those verifies does it try, as twilio-node 6.3.1's validateRequest does and in its order, the
// URL as Node's `new URL(url).toString()` serialises it (WHATWG: scheme and host lower-cased,
// default port dropped, dot segments resolved, backslashes as slashes, characters such as a
// space or, in the query, ' percent-encoded), without and with its port, then each of those
// with its query re-encoded by Node's legacy querystring (+ as %20, %7e as ~, ...): Twilio's
// back end sometimes signs such an escaped form (%27 for ' in the query), and a genuine
// delivery must not be lost. A URL whose serialisation is not reproduced exactly here (a
// non-ASCII or Punycode host, an IPv4 address not in dotted-decimal form) gets no normalised
// candidates. At most six HMACs per key are computed.
//
// Repeated POST parameters follow twilio-python and twilio-node: the values of one name are
// de-duplicated and sorted, and each contributes name+value. twilio-go's ValidateBody keeps
// only the first value per name, so it rejects genuine deliveries with repeated names (such
// as twilio-python's duplicate-parameter vector, tested here).
//
// Verify rejects, in this order: no X-Twilio-Signature (missing signature); a value that is not
// the padded standard base64 of 20 bytes (malformed signature); a request URL that is not an
// absolute http(s) URL (signature mismatch: nothing can match); a form body that does not
// decode (malformed payload); no key whose HMAC over any URL candidate matches (signature
// mismatch); a bodySHA256 in the URL that is not the SHA-256 of the body (signature mismatch).
//
// An accepted or duplicate delivery is answered with an empty TwiML document: Twilio reads the
// answer to an incoming message as TwiML ("Your application has to return TwiML ... To receive
// an incoming message and not send a reply, send <Response></Response>", Twilio's Messaging
// Webhooks page), and logs hookverify's generic JSON as an error in the account's debugger.
// Status callbacks ignore the body. A Voice webhook wants call instructions at once, which a
// queue cannot give: an empty Response ends the call.
func Twilio() *Protocol {
	return &Protocol{
		Name:        twilioName,
		DisplayName: "Twilio",
		SignatureScheme: "HMAC-SHA1 (base64) of the URL + sorted POST params (name+value), X-Twilio-Signature; JSON bodies via the signed bodySHA256 URL parameter; " +
			"a Webhook shared key's deliveries with the algorithm X-Twilio-Webhooks-Signature-Settings names (HMAC_SHA256), keyed with the SharedKey secret (add it as a secret)",
		SignsTimestamp: false,
		IdentitySource: "SHA-256 of the signed content, since Twilio sends no signed event id: \"signed-sha256:<hex>\" of the " +
			"signed URL (the URL as received or, failing that, the twilio-node normalisation of it that verified, without its port) and the sorted name+value parameter string for form posts, \"body-sha256:<hex>\" of the raw body for bodySHA256 (JSON) " +
			"deliveries, \"url-sha256:<hex>\" of the URL for parameterless (GET) callbacks. The unsigned " +
			"I-Twilio-Idempotency-Token header is not used: a replay could pick a fresh one",
		NeedsURL: true,
		DocsURL:  "https://www.twilio.com/docs/usage/webhooks/webhooks-security",
		Retries: "Twilio retries a webhook only on connection or TLS failures, by default once (connection override " +
			"#rc=0..5, within the #tt total time of at most 15 s) and then calls the fallback URL if one is set; a " +
			"retry is the same request with the same parameters, so it gets the same identity. The fallback URL is " +
			"signed over its own URL. No timestamp is signed, so there is no tolerance.",
		SuccessReply: &Reply{Status: 200, Headers: Headers{{Name: "Content-Type", Value: "text/xml"}},
			Body: []byte(`<?xml version="1.0" encoding="UTF-8"?><Response></Response>`)},
		ParseSecret:   parseTwilioSecret,
		Verify:        verifyTwilio,
		Sign:          signTwilio,
		ExampleSecret: exampleTwilioSecret,
		ExampleBody:   exampleTwilioBody,
	}
}

// parseTwilioSecret keeps the Auth Token's bytes: Twilio keys the HMAC with the token string.
func parseTwilioSecret(secret string) ([]byte, error) {
	return parseTokenSecret("the Twilio Auth Token", secret)
}

// exampleTwilioSecret is an Auth Token as the Console shows one: 32 lowercase hex digits.
func exampleTwilioSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b)
	return s, s, nil
}

// exampleTwilioBody is an incoming-SMS form post; the event id becomes the MessageSid.
func exampleTwilioBody(eventID string) []byte {
	v := url.Values{}
	v.Set("AccountSid", "AC00000000000000000000000000000000")
	v.Set("ApiVersion", "2010-04-01")
	v.Set("Body", "Hello from hookverify")
	v.Set("From", "+14155550100")
	v.Set("MessageSid", eventID)
	v.Set("NumMedia", "0")
	v.Set("SmsStatus", "received")
	v.Set("To", "+14155550199")
	return []byte(v.Encode())
}

// twilioSigned is what a Twilio signature covers besides the URL.
type twilioSigned struct {
	// bodyHash is the bodySHA256 query value when the URL carries one (JSON deliveries).
	bodyHash    string
	hasBodyHash bool
	// params is the sorted name+value concatenation of the form body (empty otherwise).
	params string
}

// twilioContent works out what the signature covers for rawURL and body. Its errors are
// *Rejection.
func twilioContent(rawURL string, body []byte) (twilioSigned, error) {
	var s twilioSigned
	if q := strings.IndexByte(rawURL, '?'); q >= 0 {
		query := rawURL[q+1:]
		if f := strings.IndexByte(query, '#'); f >= 0 {
			query = query[:f]
		}
		s.bodyHash, s.hasBodyHash = twilioQueryValue(query, twilioBodyHashParam)
	}
	if s.hasBodyHash {
		return s, nil
	}
	params, err := twilioParams(string(body))
	if err != nil {
		return s, err
	}
	s.params = params
	return s, nil
}

// twilioQueryValue returns the first value of name in a raw query, as twilio-python's parse_qs
// and twilio-node's searchParams.get do.
func twilioQueryValue(query, name string) (string, bool) {
	for _, part := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(part, "=")
		if k, err := url.QueryUnescape(k); err != nil || k != name {
			continue
		}
		if v, err := url.QueryUnescape(v); err == nil {
			return v, true
		}
	}
	return "", false
}

// twilioParams decodes an application/x-www-form-urlencoded body and returns the string
// Twilio signs after the URL: names sorted, each name's distinct values sorted, name+value
// for each. Blank values are kept (Twilio sends and signs them); empty pairs are skipped.
func twilioParams(body string) (string, error) {
	if body == "" {
		return "", nil
	}
	values := map[string]map[string]struct{}{}
	for _, part := range strings.Split(body, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "", Reject(ReasonMalformedPayload, "body is not application/x-www-form-urlencoded (bad percent-encoding)")
		}
		if values[name] == nil {
			values[name] = map[string]struct{}{}
		}
		values[name][value] = struct{}{}
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		vs := make([]string, 0, len(values[n]))
		for v := range values[n] {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(n)
			b.WriteString(v)
		}
	}
	return b.String(), nil
}

// twilioURLVariants returns the URLs whose signature is accepted for raw, as the SDKs try
// them: with the port removed, and with the scheme's default port added when it has none.
// The rest of the URL is kept byte for byte. A colon after the host with no digits ("h:/x")
// counts as a port, as twilio-node's addPort takes it: the URL is then tried as it is (which
// twilio-python's remove_port also tries), not with the default port added, which neither
// SDK tries and which would leave the URL Twilio called untried.
func twilioURLVariants(raw string) ([]string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !(ascii.EqualFold(scheme, "https") || ascii.EqualFold(scheme, "http")) {
		return nil, false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo, authority = authority[:at+1], authority[at+1:]
	}
	host, hasPort := authority, false
	if strings.HasPrefix(authority, "[") {
		rb := strings.IndexByte(authority, ']')
		if rb < 0 {
			return nil, false
		}
		host = authority[:rb+1]
		if after := authority[rb+1:]; after != "" {
			if after[0] != ':' {
				return nil, false
			}
			hasPort = true
		}
	} else if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		host, hasPort = authority[:i], true
	}
	if host == "" {
		return nil, false
	}
	prefix := scheme + "://" + userinfo
	without := prefix + host + tail
	with := raw
	if !hasPort {
		def := "80"
		if ascii.EqualFold(scheme, "https") {
			def = "443"
		}
		with = prefix + host + ":" + def + tail
	}
	if with == without {
		return []string{without}, true
	}
	return []string{without, with}, true
}

// twilioCandidate is a URL whose signature is accepted, and that URL without its port.
type twilioCandidate struct{ url, withoutPort string }

// twilioNormalizedCandidates returns the URLs twilio-node 6.3.1's validateRequest tries after
// the URL as received (tried) fails, in its order: the URL as `new URL(raw).toString()`
// serialises it without and with its port, then each of those with its query re-encoded by
// Node's legacy querystring, for back ends that sign an escaped form of the URL (such as %27
// for ' in the query). None when raw cannot be normalised exactly (see twilioNormalizeURL);
// a candidate already tried is left out, so at most four more HMACs per key are computed.
func twilioNormalizedCandidates(raw string, tried []string) []twilioCandidate {
	normalized, ok := twilioNormalizeURL(raw)
	if !ok {
		return nil
	}
	nv, ok := twilioURLVariants(normalized)
	if !ok || len(nv) != 2 {
		return nil
	}
	without, with := nv[0], nv[1]
	// The legacy query re-encoding leaves the authority alone, so it commutes with removing
	// the port.
	legacyWithout := twilioLegacyQuery(without)
	all := []twilioCandidate{
		{without, without},
		{with, without},
		{legacyWithout, legacyWithout},
		{twilioLegacyQuery(with), legacyWithout},
	}
	out := all[:0]
	seen := append([]string(nil), tried...)
	for _, c := range all {
		dup := false
		for _, t := range seen {
			dup = dup || t == c.url
		}
		if !dup {
			seen = append(seen, c.url)
			out = append(out, c)
		}
	}
	return out
}

// twilioMessage writes url followed by the parameter string.
func twilioMessage(u, params string) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(u))
		mac.Write([]byte(params))
	}
}

// twilioSharedKeyHeader names the key and algorithm of a delivery signed with a Webhook shared
// key (twilio.com/docs/usage/webhooks/webhook-shared-keys): "key=<SharedKey id>,algorithm=
// HMAC_SHA256". Such a delivery is signed as any other, over the same string, with the
// SharedKey's secret instead of the Auth Token and the algorithm named (twilio-node 6.3.1,
// lib/webhooks/webhooks.js: getSignatureAlgorithm, validateRequest).
const twilioSharedKeyHeader = "X-Twilio-Webhooks-Signature-Settings"

// twilioAlgorithm is the HMAC a delivery's X-Twilio-Signature was made with: as twilio-node
// reads the settings header, the first "algorithm=" part with a value names it, HMAC_SHA1 or
// HMAC_SHA256 in any case; no header, no such part or an empty value is the Auth Token's
// HMAC_SHA1. Any other algorithm is refused, as twilio-node refuses it. A repeated header is
// read as Node hands it to twilio-node: its values joined with ", ".
func twilioAlgorithm(h Headers) (newHash func() hash.Hash, size int, name string, err error) {
	values := h.Values(twilioSharedKeyHeader)
	if len(values) == 0 {
		return sha1.New, sha1.Size, "HMAC-SHA1", nil
	}
	settings := strings.Join(values, ", ")
	algorithm := ""
	for part := range strings.SplitSeq(settings, ",") {
		if k, v, found := strings.Cut(part, "="); found && strings.TrimSpace(k) == "algorithm" {
			if algorithm = strings.TrimSpace(v); algorithm != "" {
				break
			}
		}
	}
	switch strings.ToUpper(algorithm) {
	case "", "HMAC_SHA1":
		return sha1.New, sha1.Size, "HMAC-SHA1", nil
	case "HMAC_SHA256":
		return sha256.New, sha256.Size, "HMAC-SHA256", nil
	}
	return nil, 0, "", Reject(ReasonMalformedSignature, "%s names an algorithm other than HMAC_SHA1 and HMAC_SHA256, the ones Twilio's libraries verify",
		twilioSharedKeyHeader)
}

func verifyTwilio(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(twilioSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", twilioSignatureHeader)
	}
	newHash, size, algorithm, err := twilioAlgorithm(req.Headers)
	if err != nil {
		return Result{}, err
	}
	sig, ok := decodeStdBase64(raw, size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not the base64 of a %d-byte %s", twilioSignatureHeader, size, algorithm)
	}
	variants, ok := twilioURLVariants(req.URL)
	if !ok {
		return Result{}, Reject(ReasonSignatureMismatch,
			"the request URL is not an absolute http(s) URL, so no signature can match (set the endpoint's public_url)")
	}
	content, err := twilioContent(req.URL, req.Body)
	if err != nil {
		return Result{}, err
	}
	keyID, matched := "", false
	for _, u := range variants {
		if keyID, matched = matchKey(keys, [][]byte{sig}, newHash, twilioMessage(u, content.params)); matched {
			break
		}
	}
	// signedURL is the URL, without its port, of the candidate that verified: the string Twilio
	// signed, so that every URL form that verifies under one signature reduces to it.
	// variants[0] is the URL as received without its port.
	signedURL := variants[0]
	if !matched {
		for _, c := range twilioNormalizedCandidates(req.URL, variants) {
			if keyID, matched = matchKey(keys, [][]byte{sig}, newHash, twilioMessage(c.url, content.params)); matched {
				signedURL = c.withoutPort
				break
			}
		}
	}
	if !matched {
		return Result{}, rejectNoMatch(twilioSignatureHeader, 0, keys)
	}
	if content.hasBodyHash {
		sum := sha256.Sum256(req.Body)
		want, ok := decodeLowerHex(content.bodyHash, sha256.Size)
		if !ok || !hmac.Equal(sum[:], want) {
			return Result{}, Reject(ReasonSignatureMismatch, "the body does not match the signed %s URL parameter", twilioBodyHashParam)
		}
	}
	return Result{KeyID: keyID, EventID: twilioEventID(signedURL, req.Body, content)}, nil
}

// twilioEventID hashes exactly what the signature authenticates, so that any two deliveries
// carrying the same valid signature share one identity (Twilio's signed string is ambiguous:
// "Body=hi" and "Bod=yhi" sign alike, so the raw form body would not do). canonURL is the URL
// candidate that verified, with its port removed (the request URL's own when it verifies as
// received): a replay that only adds or changes the port, or changes the URL to another form
// that normalises to the signed one, still verifies, so the raw URL would give it a fresh
// identity.
func twilioEventID(canonURL string, body []byte, c twilioSigned) string {
	switch {
	case c.hasBodyHash:
		return bodySHA256ID(body)
	case c.params != "":
		// The URL too: the signed string runs the URL and the parameters together, so a replay
		// that moves the URL's last bytes into the first parameter's name still verifies.
		sum := sha256.Sum256([]byte(canonURL + c.params))
		return "signed-sha256:" + hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256([]byte(canonURL))
	return "url-sha256:" + hex.EncodeToString(sum[:])
}

// signTwilio produces X-Twilio-Signature over in.URL exactly as given (Twilio signs the URL it
// calls) and the form parameters of in.Body, or over the URL alone when it carries bodySHA256,
// which must then be the body's hash. Twilio has one Auth Token per account, so only
// secrets[0] signs. It also sends I-Twilio-Idempotency-Token = in.EventID when set, as Twilio
// sends one with every webhook.
func signTwilio(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("twilio: sign needs the Auth Token")
	}
	key, err := parseTwilioSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("twilio: %w", err)
	}
	if _, ok := twilioURLVariants(in.URL); !ok {
		return nil, errors.New("twilio: sign needs the absolute http(s) URL Twilio calls")
	}
	content, err := twilioContent(in.URL, in.Body)
	if err != nil {
		return nil, fmt.Errorf("twilio: %w", err)
	}
	if content.hasBodyHash {
		sum := sha256.Sum256(in.Body)
		if content.bodyHash != hex.EncodeToString(sum[:]) {
			return nil, errors.New("twilio: the URL's bodySHA256 is not the SHA-256 of the body")
		}
	}
	sig := base64.StdEncoding.EncodeToString(hmacSum(sha1.New, key, twilioMessage(in.URL, content.params)))
	h := Headers{{Name: twilioSignatureHeader, Value: sig}}
	if in.EventID != "" {
		h = append(h, Header{Name: twilioIdempotencyHeader, Value: in.EventID})
	}
	return h, nil
}
