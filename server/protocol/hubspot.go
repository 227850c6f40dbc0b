package protocol

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"
	"time"
)

// HubSpot signs requests three ways, and sends the newest it can beside the older ones:
//   - v3: X-HubSpot-Signature-v3 = base64 HMAC-SHA256, keyed with the app's client secret, of
//     method + URI + body + X-HubSpot-Request-Timestamp (unix milliseconds, signed as sent);
//   - v2: X-HubSpot-Signature = hex SHA-256 (a plain hash, not an HMAC) of client secret +
//     method + URI + body, with X-HubSpot-Signature-Version: v2;
//   - v1: X-HubSpot-Signature = hex SHA-256 of client secret + body, with version v1 (what
//     webhook API subscriptions send).
const (
	hubspotName             = "hubspot"
	hubspotSignatureV3      = "X-HubSpot-Signature-v3"
	hubspotTimestampHeader  = "X-HubSpot-Request-Timestamp"
	hubspotSignatureLegacy  = "X-HubSpot-Signature"
	hubspotVersionHeader    = "X-HubSpot-Signature-Version"
	hubspotDefaultTolerance = 300 * time.Second
	// hubspotMaxPlainID bounds an identity made of the event's own fields; longer ones are hashed.
	hubspotMaxPlainID = 200
)

// HubSpot returns the protocol for HubSpot app webhooks (and workflow or CRM-card requests
// signed the same way).
//
// When X-HubSpot-Signature-v3 is present it alone decides: the legacy signature is not
// consulted, so a v3 delivery cannot be downgraded to the untimed v1/v2 check by tampering with
// v3. Otherwise X-HubSpot-Signature is checked as X-HubSpot-Signature-Version says (v1 when the
// version header is absent, as HubSpot's SDKs default; other versions are not supported). v1 and
// v2 sign no timestamp, so a captured legacy-only delivery could be replayed later; its identity
// (from the signed body) still deduplicates it.
//
// The v3 URI is matched as received and, when different, with the percent-encodings HubSpot's
// request-validation page says to decode (%3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B); the
// official Node and Python SDKs sign the URL exactly as given, which the first variant covers.
//
// Verify rejects, in this order: neither signature header (missing signature); for v3, a value
// that is not the base64 of 32 bytes (malformed signature), no or non-decimal
// X-HubSpot-Request-Timestamp (missing timestamp), no URL (signature mismatch), no key matching
// (signature mismatch), the timestamp more than the tolerance from Now either way (timestamp
// out of tolerance); for v1/v2, an unsupported version (missing signature), a value that is not
// 64 lowercase hex digits (malformed signature), no key matching (signature mismatch); then an
// empty body, or an event array element without eventId (missing event id), or a body that is
// not JSON (malformed payload).
func HubSpot() *Protocol {
	return &Protocol{
		Name:             hubspotName,
		DisplayName:      "HubSpot",
		SignatureScheme:  "HMAC-SHA256 (base64) of method + URI + body + ms timestamp, X-HubSpot-Signature-v3; legacy v2/v1 SHA-256 (hex) of secret + [method + URI +] body",
		SignsTimestamp:   true,
		DefaultTolerance: hubspotDefaultTolerance,
		IdentitySource: "each event of the body's JSON array: portalId:subscriptionId:eventId:occurredAt (HubSpot says eventId alone " +
			"is not guaranteed unique; attemptNumber, which changes on retry, is left out); several events are one identity " +
			"\"events-sha256:<hex>\" of their sorted keys; a body that is not an event array falls back to \"body-sha256:<hex>\"",
		NeedsURL: true,
		DocsURL:  "https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation",
		Retries: "HubSpot retries a failed webhook batch (connection failure, timeout after 5 s, or 4xx/5xx other than 429 " +
			"handled separately) up to 10 times over the next 24 hours (third-party guides say 3 days), each retry a new " +
			"request with a fresh X-HubSpot-Request-Timestamp and v3 signature and an incremented attemptNumber in the " +
			"body. HubSpot's own guidance is to reject timestamps older than 5 minutes, so the 5-minute default (applied " +
			"in both directions) never rejects a genuine retry.",
		ParseSecret:   parseHubSpotSecret,
		Verify:        verifyHubSpot,
		Sign:          signHubSpot,
		ExampleSecret: exampleHubSpotSecret,
		ExampleBody:   exampleHubSpotBody,
	}
}

// parseHubSpotSecret keeps the client secret's bytes: HubSpot hashes and keys with the string.
func parseHubSpotSecret(secret string) ([]byte, error) {
	return parseTokenSecret("the HubSpot client secret", secret)
}

// exampleHubSpotSecret is a client secret as HubSpot shows one: a random UUID.
func exampleHubSpotSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	s := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	return s, s, nil
}

// exampleHubSpotBody is a one-event contact.creation batch whose eventId is the event id.
func exampleHubSpotBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`[{"eventId":` + string(id) + `,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,` +
		`"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","changeFlag":"NEW","appId":54321}]`)
}

// hubspotURIDecodes are the percent-encodings HubSpot's v3 instructions say to decode.
var hubspotURIDecodes = strings.NewReplacer(
	"%3A", ":", "%3a", ":", "%2F", "/", "%2f", "/", "%3F", "?", "%3f", "?", "%40", "@",
	"%21", "!", "%24", "$", "%27", "'", "%28", "(", "%29", ")", "%2A", "*", "%2a", "*",
	"%2C", ",", "%2c", ",", "%3B", ";", "%3b", ";",
)

// hubspotV3Message writes method + uri + body + timestamp (the header string as sent).
func hubspotV3Message(method, uri string, body []byte, ts string) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(method))
		mac.Write([]byte(uri))
		mac.Write(body)
		mac.Write([]byte(ts))
	}
}

// hubspotMethod is the request method, POST when the caller did not say (HubSpot's SDKs'
// default).
func hubspotMethod(m string) string {
	if m == "" {
		return "POST"
	}
	return m
}

func verifyHubSpot(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	var keyID string
	if raw, ok := req.Headers.Get(hubspotSignatureV3); ok {
		id, err := verifyHubSpotV3(req, raw, keys, p)
		if err != nil {
			return Result{}, err
		}
		keyID = id
	} else if raw, ok := req.Headers.Get(hubspotSignatureLegacy); ok {
		id, err := verifyHubSpotLegacy(req, raw, keys)
		if err != nil {
			return Result{}, err
		}
		keyID = id
	} else {
		return Result{}, Reject(ReasonMissingSignature, "no %s or %s header", hubspotSignatureV3, hubspotSignatureLegacy)
	}
	id, err := hubspotEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

func verifyHubSpotV3(req *Request, raw string, keys []Key, p Params) (string, error) {
	sig, ok := decodeStdBase64(raw, sha256.Size)
	if !ok {
		return "", Reject(ReasonMalformedSignature, "%s is not the base64 of a 32-byte HMAC-SHA256", hubspotSignatureV3)
	}
	tsRaw, _ := req.Headers.Get(hubspotTimestampHeader)
	if tsRaw == "" {
		return "", Reject(ReasonMissingTimestamp, "no %s header", hubspotTimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsRaw) // the same digit rules; the unit is milliseconds
	if !ok {
		return "", Reject(ReasonMissingTimestamp, "%s is not decimal unix milliseconds", hubspotTimestampHeader)
	}
	if req.URL == "" {
		return "", Reject(ReasonSignatureMismatch, "no request URL, so no signature can match (set the endpoint's public_url)")
	}
	method := hubspotMethod(req.Method)
	uris := []string{req.URL}
	if decoded := hubspotURIDecodes.Replace(req.URL); decoded != req.URL {
		uris = append(uris, decoded)
	}
	keyID, matched := "", false
	for _, u := range uris {
		if keyID, matched = matchKey(keys, [][]byte{sig}, sha256.New, hubspotV3Message(method, u, req.Body, tsRaw)); matched {
			break
		}
	}
	if !matched {
		return "", rejectNoMatch(hubspotSignatureV3, 0, keys)
	}
	if err := checkTimestampMillisRoundedUp(ts, p.Now, effectiveTolerance(p, hubspotDefaultTolerance)); err != nil {
		return "", err
	}
	return keyID, nil
}

// hubspotLegacySum is the v1 or v2 digest for key: SHA-256 of key + [method + uri +] body.
func hubspotLegacySum(version string, key []byte, method, uri string, body []byte) []byte {
	h := sha256.New()
	h.Write(key)
	if version == "v2" {
		h.Write([]byte(method))
		h.Write([]byte(uri))
	}
	h.Write(body)
	return h.Sum(nil)
}

func verifyHubSpotLegacy(req *Request, raw string, keys []Key) (string, error) {
	version, ok := req.Headers.Get(hubspotVersionHeader)
	if !ok {
		version = "v1"
	}
	if version != "v1" && version != "v2" {
		return "", Reject(ReasonMissingSignature, "%s uses an unsupported %s (want v1 or v2, or the v3 header)", hubspotSignatureLegacy, hubspotVersionHeader)
	}
	sig, ok := decodeLowerHex(raw, sha256.Size)
	if !ok {
		return "", Reject(ReasonMalformedSignature, "%s is not 64 lowercase hex digits", hubspotSignatureLegacy)
	}
	if version == "v2" && req.URL == "" {
		return "", Reject(ReasonSignatureMismatch, "no request URL, so no v2 signature can match (set the endpoint's public_url)")
	}
	method := hubspotMethod(req.Method)
	for _, k := range keys {
		if len(k.Material) == 0 {
			continue
		}
		if hmac.Equal(hubspotLegacySum(version, k.Material, method, req.URL, req.Body), sig) {
			return k.ID, nil
		}
	}
	return "", rejectNoMatch(hubspotSignatureLegacy, 0, keys)
}

// hubspotEventID derives the identity from the (authenticated) body; see IdentitySource.
func hubspotEventID(body []byte) (string, error) {
	trimmed := bytes.TrimLeft(body, jsonSpace)
	if len(trimmed) == 0 {
		return "", Reject(ReasonMissingEventID, "body is empty, so it names no event")
	}
	if trimmed[0] != '[' {
		if !json.Valid(body) {
			return "", Reject(ReasonMalformedPayload, "body is not JSON")
		}
		return bodySHA256ID(body), nil
	}
	var events []map[string]json.RawMessage
	if err := json.Unmarshal(body, &events); err != nil {
		return "", Reject(ReasonMalformedPayload, "body is not a JSON array of event objects")
	}
	if len(events) == 0 {
		return "", Reject(ReasonMissingEventID, "body is an empty event array")
	}
	keys := make([]string, 0, len(events))
	for i, ev := range events {
		eventID, ok := hubspotScalar(ev["eventId"])
		if !ok || eventID == "" {
			return "", Reject(ReasonMissingEventID, "event %d of the body has no eventId", i)
		}
		portal, _ := hubspotScalar(ev["portalId"])
		sub, _ := hubspotScalar(ev["subscriptionId"])
		at, _ := hubspotScalar(ev["occurredAt"])
		keys = append(keys, portal+":"+sub+":"+eventID+":"+at)
	}
	if len(keys) == 1 && len(keys[0]) <= hubspotMaxPlainID {
		return keys[0], nil
	}
	sort.Strings(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	return "events-sha256:" + hex.EncodeToString(sum[:]), nil
}

// hubspotScalar renders a JSON number as written or a string's value; ok is false otherwise.
func hubspotScalar(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false
		}
		return s, true
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", false
	}
	return n.String(), true
}

// checkTimestampMillisRoundedUp is checkTimestamp for a unix-millisecond timestamp: accepted
// when within tol of now in either direction, boundaries included. The detail states whole
// seconds, rounded up.
func checkTimestampMillisRoundedUp(tsMs int64, now time.Time, tol time.Duration) error {
	nowMs := now.UnixMilli()
	tolMs := uint64(tol.Milliseconds())
	if tsMs <= nowMs {
		age := uint64(nowMs) - uint64(tsMs) // fits: the difference of two int64s
		if age > tolMs {
			return Reject(ReasonTimestampOutOfTolerance,
				"timestamp is %ds old, more than the %s tolerance", age/1000+secondCarry(age%1000), formatTolerance(tol))
		}
		return nil
	}
	ahead := uint64(tsMs) - uint64(nowMs)
	if ahead > tolMs {
		return Reject(ReasonTimestampOutOfTolerance,
			"timestamp is %ds in the future, more than the %s tolerance", ahead/1000+secondCarry(ahead%1000), formatTolerance(tol))
	}
	return nil
}

func secondCarry(rem uint64) uint64 {
	if rem > 0 {
		return 1
	}
	return 0
}

// signHubSpot produces what HubSpot sends: the v3 signature with its millisecond timestamp,
// and the legacy v1 signature with its version header. An app has one client secret, so only
// secrets[0] signs.
func signHubSpot(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("hubspot: sign needs the client secret")
	}
	if in.URL == "" {
		return nil, errors.New("hubspot: sign needs the URL HubSpot calls")
	}
	if in.Timestamp.IsZero() || in.Timestamp.UnixMilli() < 0 {
		return nil, errors.New("hubspot: sign needs a timestamp at or after 1970")
	}
	key, err := parseHubSpotSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("hubspot: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	v3 := base64.StdEncoding.EncodeToString(hmacSum(sha256.New, key, hubspotV3Message(hubspotMethod(in.Method), in.URL, in.Body, ts)))
	v1 := hex.EncodeToString(hubspotLegacySum("v1", key, "", "", in.Body))
	return Headers{
		{Name: hubspotSignatureLegacy, Value: v1},
		{Name: hubspotVersionHeader, Value: "v1"},
		{Name: hubspotSignatureV3, Value: v3},
		{Name: hubspotTimestampHeader, Value: ts},
	}, nil
}
