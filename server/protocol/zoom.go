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
	"strconv"
	"strings"
	"time"
)

// Zoom signs every webhook with x-zm-signature: v0=<hex HMAC-SHA256 of
// "v0:{x-zm-request-timestamp}:{body}"> keyed with the app's Webhook Secret Token — the same
// message layout as Slack. The endpoint.url_validation handshake (sent when the URL is saved and
// every 72 hours) is answered with {"plainToken", "encryptedToken": hex HMAC-SHA256(secret,
// plainToken)}; it carries the same signature headers and is authenticated like any event.
const (
	zoomName             = "zoom"
	zoomSignatureHeader  = "x-zm-signature"
	zoomTimestampHeader  = "x-zm-request-timestamp"
	zoomVersion          = "v0"
	zoomValidationEvent  = "endpoint.url_validation"
	zoomEventIDPrefix    = "zoom-sha256:"
	zoomDefaultTolerance = 90 * time.Minute
	// zoomMillisDigits: Zoom's docs show x-zm-request-timestamp in seconds, but the unit is not
	// stated and some integrators report milliseconds; a value of 13 or more digits can only be
	// milliseconds (in seconds it would be after the year 33000), so both are read correctly.
	zoomMillisDigits = 13
)

// Zoom returns the protocol for Zoom app event subscriptions (webhooks).
//
// Verify rejects, in this order: no x-zm-signature (missing signature); a signature that is
// empty or not version=value (malformed signature); a version other than v0 (missing
// signature); a v0 value that is not 64 lowercase hex digits (malformed signature); no or empty
// x-zm-request-timestamp, or one that is not a decimal unix time in seconds (or milliseconds,
// when it has 13 or more digits) (missing timestamp); no key
// matching (signature mismatch); the timestamp more than the tolerance away from Now in either
// direction (timestamp out of tolerance); a body that is not a JSON object (malformed payload);
// an endpoint.url_validation without a non-empty string payload.plainToken (malformed payload);
// an event without a non-empty string "event", an integer "event_ts" or an object "payload"
// (missing event id).
//
// The official samples (zoom/webhook-sample, @zoom/rivet) hash JSON.stringify of the parsed
// body; this verifies the raw bytes, which is what Zoom signs (its bodies are compact JSON).
func Zoom() *Protocol {
	return &Protocol{
		Name:             zoomName,
		DisplayName:      "Zoom",
		SignatureScheme:  `HMAC-SHA256 (hex) of "v0:{timestamp}:{body}", x-zm-signature v0`,
		SignsTimestamp:   true,
		DefaultTolerance: zoomDefaultTolerance,
		IdentitySource: `derived from the body, since Zoom sends no documented event id: "zoom-sha256:" + hex ` +
			`SHA-256 of the "event" name, the "event_ts" (ms) and the compacted "payload" object, each ` +
			`length-prefixed; top-level extras such as a per-delivery download_token are left out. ` +
			`x-zm-trackingid is not used: Zoom documents it only as identifying the request, and ` +
			`whether it survives a retry is not documented`,
		DocsURL: "https://developers.zoom.us/docs/api/webhooks/",
		Retries: "A delivery not answered with 200 or 204 within 3 seconds is sent 3 more times: 5 minutes " +
			"after the first attempt, 20 minutes after the first retry and 60 minutes after the second, " +
			"so the last retry comes about 85 minutes after the event (https://developers.zoom.us/blog/webhook-delays/). " +
			"Zoom does not document whether a retry carries a fresh x-zm-request-timestamp and signature, " +
			"so the default tolerance of 90 minutes accepts even the last retry if it is not re-signed; " +
			"a replay inside that window yields the same identity and is caught as a duplicate.",
		ParseSecret:   parseZoomSecret,
		Verify:        verifyZoom,
		Sign:          signZoom,
		ExampleSecret: exampleZoomSecret,
		ExampleBody:   zoomExampleBody,
	}
}

// parseZoomSecret keeps the Secret Token's bytes: Zoom uses the string as the HMAC key.
func parseZoomSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the Zoom secret token is empty")
	}
	if strings.TrimSpace(secret) != secret {
		return nil, invalidSecret("the Zoom secret token has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// exampleZoomSecret is 22 URL-safe characters, the shape of a Zoom Secret Token.
func exampleZoomSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	return s, s, nil
}

// zoomExampleBody is a meeting.started event whose meeting uuid is the event id.
func zoomExampleBody(eventID string) []byte {
	return marshalJSONUnescaped(map[string]any{
		"event":    "meeting.started",
		"event_ts": int64(1767000000123),
		"payload": map[string]any{
			"account_id": "AAAAAABBBB",
			"object": map[string]any{
				"id":         "1234567890",
				"uuid":       eventID,
				"host_id":    "x1yCzABCDEfg23HiJKl4mN",
				"topic":      "My Meeting",
				"type":       2,
				"start_time": "2025-12-29T09:20:00Z",
				"timezone":   "UTC",
				"duration":   60,
			},
		},
	})
}

// parseZoomSignature decodes "v0=<hex>". Its errors are *Rejection.
func parseZoomSignature(v string) ([]byte, error) {
	if v == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is empty", zoomSignatureHeader)
	}
	version, digest, ok := cutByte(v, '=')
	if !ok || version == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is not v0=<hex>", zoomSignatureHeader)
	}
	if version != zoomVersion {
		return nil, Reject(ReasonMissingSignature, "%s has an unsupported version (want v0=)", zoomSignatureHeader)
	}
	sig, ok := decodeLowerHex(digest, sha256.Size)
	if !ok {
		return nil, Reject(ReasonMalformedSignature, "%s is not v0= and 64 lowercase hex digits", zoomSignatureHeader)
	}
	return sig, nil
}

func verifyZoom(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(zoomSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", zoomSignatureHeader)
	}
	sig, err := parseZoomSignature(raw)
	if err != nil {
		return Result{}, err
	}
	tsRaw, _ := req.Headers.Get(zoomTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", zoomTimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not a decimal unix time", zoomTimestampHeader)
	}
	// "v0:{timestamp}:{body}" with the header string verbatim, exactly Slack's layout.
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, slackMessage(tsRaw, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(zoomSignatureHeader, 0, keys)
	}
	tol := effectiveTolerance(p, zoomDefaultTolerance)
	if len(tsRaw) >= zoomMillisDigits {
		// Milliseconds are compared as such: ts/1000 against Now would refuse a delivery up
		// to a second inside the old edge and accept one up to a second beyond the future edge.
		err = checkTimestampMillisRoundedUp(ts, p.Now, tol)
	} else {
		err = checkTimestamp(ts, p.Now, tol)
	}
	if err != nil {
		return Result{}, err
	}
	top, err := jsonObject(req.Body)
	if err != nil {
		return Result{}, err
	}
	event, _, _ := jsonString(top, "event")
	if event == zoomValidationEvent {
		plain, _, ok := jsonString(jsonObjectField(top, "payload"), "plainToken")
		if !ok || plain == "" {
			return Result{}, Reject(ReasonMalformedPayload, "endpoint.url_validation has no payload.plainToken string")
		}
		var material []byte
		for _, k := range keys {
			if k.ID == keyID && len(k.Material) > 0 {
				material = k.Material
				break
			}
		}
		return Result{KeyID: keyID, Handshake: jsonReply(zoomValidationReply(material, plain))}, nil
	}
	id, err := zoomEventID(top)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// zoomValidationReply is the body Zoom expects for endpoint.url_validation.
func zoomValidationReply(key []byte, plainToken string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(plainToken))
	return marshalJSONUnescaped(struct {
		PlainToken     string `json:"plainToken"`
		EncryptedToken string `json:"encryptedToken"`
	}{plainToken, hex.EncodeToString(mac.Sum(nil))})
}

// zoomEventID derives the identity from event, event_ts and the compacted payload.
func zoomEventID(top map[string]json.RawMessage) (string, error) {
	event, _, ok := jsonString(top, "event")
	if !ok || event == "" {
		return "", Reject(ReasonMissingEventID, `body has no non-empty string "event"`)
	}
	tsRaw, ok := top["event_ts"]
	if !ok {
		return "", Reject(ReasonMissingEventID, `body has no "event_ts"`)
	}
	ts := string(bytes.TrimSpace(tsRaw))
	if _, ok := parseUnixSeconds(ts); !ok {
		return "", Reject(ReasonMissingEventID, `body field "event_ts" is not a non-negative integer`)
	}
	payload, ok := top["payload"]
	if !ok || jsonObjectField(top, "payload") == nil {
		return "", Reject(ReasonMissingEventID, `body has no "payload" object`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return "", Reject(ReasonMalformedPayload, `body field "payload" is not valid JSON`)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(event), []byte(ts), compact.Bytes()} {
		var n [20]byte
		h.Write(strconv.AppendInt(n[:0], int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return zoomEventIDPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// signZoom produces the two headers Zoom sends. An app has one Secret Token, so only
// secrets[0] signs.
func signZoom(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("zoom: sign needs a secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("zoom: sign needs a timestamp at or after 1970")
	}
	key, err := parseZoomSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("zoom: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	sum := hmacSum(sha256.New, key, slackMessage(ts, in.Body))
	return Headers{
		{Name: zoomTimestampHeader, Value: ts},
		{Name: zoomSignatureHeader, Value: zoomVersion + "=" + hex.EncodeToString(sum)},
	}, nil
}
