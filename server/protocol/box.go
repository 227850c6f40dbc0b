package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// Box (V2 webhooks) signs each delivery twice, once per signature key of the application:
// BOX-SIGNATURE-PRIMARY and BOX-SIGNATURE-SECONDARY are the base64 HMAC-SHA256, keyed with the
// key's characters, of the raw body followed by the BOX-DELIVERY-TIMESTAMP header (RFC 3339).
const (
	boxName             = "box"
	boxPrimaryHeader    = "BOX-SIGNATURE-PRIMARY"
	boxSecondaryHeader  = "BOX-SIGNATURE-SECONDARY"
	boxTimestampHeader  = "BOX-DELIVERY-TIMESTAMP"
	boxDeliveryIDHeader = "BOX-DELIVERY-ID"
	boxVersionHeader    = "BOX-SIGNATURE-VERSION"
	boxAlgorithmHeader  = "BOX-SIGNATURE-ALGORITHM"
	boxDefaultTolerance = 10 * time.Minute
)

// Box returns the protocol for Box V2 webhooks. A secret is one of the application's two
// signature keys; either header signed with either configured key authenticates, so both
// keys may be added during rotation.
//
// The identity is the webhook event's "id" in the body, which Box keeps across retries. The
// BOX-DELIVERY-ID header is not used: Box changes it on every retry. A body without a
// top-level string "id" falls back to "body-sha256:" and the hex SHA-256 of the raw body.
//
// Verify rejects, in this order: BOX-SIGNATURE-VERSION other than 1 or BOX-SIGNATURE-ALGORITHM
// other than HmacSHA256, or neither signature header (missing signature); no signature header
// holding 32 bytes of padded base64 (malformed signature); no or unparseable
// BOX-DELIVERY-TIMESTAMP (missing timestamp: it is signed); no signature matching a key
// (malformed signature if one header was unparseable, else signature mismatch); the timestamp
// more than the tolerance (default 10 minutes, as Box's docs and SDKs check) away from Now in
// either direction. Box's older box-node-sdk (validateDeliveryTimestamp) checks only the past;
// its generated SDKs (box/box-typescript-sdk-gen and box/box-java-sdk-gen,
// WebhooksManager.validateMessage) also reject any timestamp after their own clock. The
// symmetric tolerance here leaves room for clock skew.
func Box() *Protocol {
	return &Protocol{
		Name:             boxName,
		DisplayName:      "Box",
		SignatureScheme:  "HMAC-SHA256 (base64) of body + BOX-DELIVERY-TIMESTAMP, BOX-SIGNATURE-PRIMARY/SECONDARY",
		SignsTimestamp:   true,
		DefaultTolerance: boxDefaultTolerance,
		IdentitySource:   `body JSON field "id" (the webhook event id, kept across retries; BOX-DELIVERY-ID changes per retry); else body-sha256 of the raw body`,
		DocsURL:          "https://developer.box.com/guides/webhooks/v2/signatures-v2/",
		Retries: "Box resends a delivery that gets no 2xx within 30 seconds up to 10 times, the first 5 minutes after the " +
			"failure, then with exponential back-off (developer.box.com/guides/webhooks/v2). Each attempt has a new " +
			"BOX-DELIVERY-ID and a BOX-DELIVERY-TIMESTAMP of when it was sent, and is signed over that timestamp, so the " +
			"10-minute tolerance (Box's own) does not reject a legitimate retry; the body id deduplicates them.",
		ParseSecret:   parseBoxSecret,
		Verify:        verifyBox,
		Sign:          signBox,
		ExampleSecret: sharedExample(""),
		ExampleBody:   boxExampleBody,
	}
}

func parseBoxSecret(secret string) ([]byte, error) {
	switch {
	case secret == "":
		return nil, invalidSecret("the Box signature key is empty")
	case strings.TrimSpace(secret) != secret:
		return nil, invalidSecret("the Box signature key has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// boxMessage writes the body then the timestamp header exactly as received.
func boxMessage(body []byte, ts string) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write(body)
		mac.Write([]byte(ts))
	}
}

func verifyBox(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if v, ok := req.Headers.Get(boxVersionHeader); ok && v != "1" {
		return Result{}, Reject(ReasonMissingSignature, "%s is not 1, the only version known", boxVersionHeader)
	}
	if v, ok := req.Headers.Get(boxAlgorithmHeader); ok && v != "HmacSHA256" {
		return Result{}, Reject(ReasonMissingSignature, "%s is not HmacSHA256, the only algorithm known", boxAlgorithmHeader)
	}
	var sigs [][]byte
	found, malformed := 0, 0
	for _, name := range []string{boxPrimaryHeader, boxSecondaryHeader} {
		v, ok := req.Headers.Get(name)
		if !ok {
			continue
		}
		found++
		if sig, ok := decodeStdBase64(v, sha256.Size); ok {
			sigs = append(sigs, sig)
		} else {
			malformed++
		}
	}
	switch {
	case found == 0:
		return Result{}, Reject(ReasonMissingSignature, "no %s or %s header", boxPrimaryHeader, boxSecondaryHeader)
	case len(sigs) == 0:
		return Result{}, Reject(ReasonMalformedSignature, "no Box signature header is 32 bytes of padded base64")
	}
	tsRaw, _ := req.Headers.Get(boxTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", boxTimestampHeader)
	}
	ts, err := time.Parse(time.RFC3339Nano, tsRaw)
	if err != nil {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not an RFC 3339 time", boxTimestampHeader)
	}
	keyID, ok := matchKey(keys, sigs, sha256.New, boxMessage(req.Body, tsRaw))
	if !ok {
		return Result{}, rejectNoMatch("BOX-SIGNATURE-PRIMARY/SECONDARY", malformed, keys)
	}
	if err := checkGenericTime(ts, p.Now, effectiveTolerance(p, boxDefaultTolerance)); err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: boxEventID(req.Body)}, nil
}

// boxEventID is the body's top-level "id", else the body hash.
func boxEventID(body []byte) string {
	var ev struct {
		ID json.RawMessage `json:"id"`
	}
	var id string
	if json.Unmarshal(body, &ev) == nil && json.Unmarshal(ev.ID, &id) == nil && id != "" && len(id) <= 400 {
		return id
	}
	return bodySHA256ID(body)
}

// signBox signs as Box does: secrets[0] is the primary key, secrets[1] (if any) the secondary.
func signBox(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("box: sign needs a signature key")
	}
	if len(secrets) > 2 {
		return nil, errors.New("box: an application has at most two signature keys")
	}
	if in.Timestamp.IsZero() {
		return nil, errors.New("box: sign needs a timestamp")
	}
	ts := in.Timestamp.UTC().Format(time.RFC3339)
	delivery := sha256.Sum256(append(append([]byte(ts), 0), in.Body...))
	h := Headers{
		{Name: boxDeliveryIDHeader, Value: hex.EncodeToString(delivery[:16])},
		{Name: boxTimestampHeader, Value: ts},
		{Name: boxAlgorithmHeader, Value: "HmacSHA256"},
		{Name: boxVersionHeader, Value: "1"},
	}
	for i, s := range secrets {
		key, err := parseBoxSecret(s)
		if err != nil {
			return nil, fmt.Errorf("box: secret %d: %w", i, err)
		}
		name := boxPrimaryHeader
		if i == 1 {
			name = boxSecondaryHeader
		}
		h = append(h, Header{Name: name, Value: base64.StdEncoding.EncodeToString(hmacSum(sha256.New, key, boxMessage(in.Body, ts)))})
	}
	return h, nil
}

// boxExampleBody is a FILE.UPLOADED webhook event whose id is the event id.
func boxExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"type":"webhook_event","id":` + string(id) + `,"created_at":"2026-01-02T03:04:05-08:00","trigger":"FILE.UPLOADED","webhook":{"id":"1234567890","type":"webhook"},"source":{"id":"1234567890","type":"file","name":"Test.txt"}}`)
}
