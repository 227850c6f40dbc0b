package protocol

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Telnyx (API v2 webhooks) signs every webhook with Ed25519: telnyx-signature-ed25519 is the
// base64 signature of "{telnyx-timestamp}|{raw body}", verifiable with the account's public key
// as the Mission Control Portal shows it (base64 of the 32-byte key).
const (
	telnyxName             = "telnyx"
	telnyxSignatureHeader  = "telnyx-signature-ed25519"
	telnyxTimestampHeader  = "telnyx-timestamp"
	telnyxDefaultTolerance = 300 * time.Second
)

// Telnyx returns the protocol for Telnyx API v2 webhooks.
//
// Verify rejects, in this order: no telnyx-signature-ed25519 (missing signature); a signature
// that is not 64 bytes in padded standard base64 (malformed signature); no or empty
// telnyx-timestamp, or one that is not decimal unix seconds (missing timestamp); no public key
// verifying the signature (signature mismatch); the timestamp more than the tolerance away
// from Now in either direction, as telnyx-node 7.24.0 checks it (telnyx-python accepts
// future timestamps) (timestamp out of tolerance); a body that is not a JSON object (malformed payload); no
// "data" object, a data.id that is not a non-empty string, or an "event" record without
// data.id (missing event id).
func Telnyx() *Protocol {
	return &Protocol{
		Name:             telnyxName,
		DisplayName:      "Telnyx",
		SignatureScheme:  `Ed25519 (base64) of "{timestamp}|{body}", telnyx-signature-ed25519`,
		SignsTimestamp:   true,
		DefaultTolerance: telnyxDefaultTolerance,
		IdentitySource: `body JSON field "data.id" (the event's UUID); for data records of another type ` +
			`than "event" that carry no id (such as link_clicked): "body-sha256:" + hex SHA-256 of the raw body`,
		DocsURL: "https://developers.telnyx.com/docs/development/api-fundamentals/webhooks",
		Retries: "A webhook not answered with a 2xx is delivered again, to the failover URL when one is " +
			"configured; schedules are product-specific and deliveries may be duplicated or reordered. " +
			"telnyx-timestamp is documented as the time the webhook was sent, and messaging webhooks " +
			"carry the attempt number in the signed body (meta.attempt), so a retry is signed afresh; " +
			"the default tolerance is the SDKs' 300s (telnyx-python Webhook.DEFAULT_TOLERANCE), and " +
			"data.id stays the same across attempts.",
		ParseSecret:   parseTelnyxPublicKey,
		Verify:        verifyTelnyx,
		Sign:          signTelnyx,
		ExampleSecret: exampleTelnyxSecret,
		ExampleBody:   telnyxExampleBody,
	}
}

// parseTelnyxPublicKey decodes the portal's public key: base64 of 32 bytes.
func parseTelnyxPublicKey(secret string) ([]byte, error) {
	key, ok := decodeStdBase64(secret, ed25519.PublicKeySize)
	if !ok {
		return nil, invalidSecret("a Telnyx public key is 32 bytes in standard base64 (44 characters), as the portal shows it")
	}
	return key, nil
}

// parseTelnyxSigningKey decodes a private key given as base64 of the 32-byte Ed25519 seed,
// the encoding PyNaCl's SigningKey uses (and telnyx-python's tests sign with).
func parseTelnyxSigningKey(secret string) (ed25519.PrivateKey, error) {
	seed, ok := decodeStdBase64(secret, ed25519.SeedSize)
	if !ok {
		return nil, invalidSecret("the signing key is not a 32-byte Ed25519 seed in standard base64")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// exampleTelnyxSecret returns a fresh key pair: signing is the base64 seed, verifying the
// base64 public key.
func exampleTelnyxSecret() (string, string, error) {
	seed, err := randomBytes(ed25519.SeedSize)
	if err != nil {
		return "", "", err
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return base64.StdEncoding.EncodeToString(seed), base64.StdEncoding.EncodeToString(pub), nil
}

// telnyxExampleBody is a message.received webhook whose data.id is the event id.
func telnyxExampleBody(eventID string) []byte {
	return marshalJSONUnescaped(map[string]any{
		"data": map[string]any{
			"event_type":  "message.received",
			"id":          eventID,
			"occurred_at": "2025-12-29T09:20:00.000+00:00",
			"payload": map[string]any{
				"direction": "inbound",
				"from":      map[string]any{"phone_number": "+13125550001"},
				"to":        []any{map[string]any{"phone_number": "+17735550002"}},
				"text":      "Hello from Telnyx!",
				"type":      "SMS",
			},
			"record_type": "event",
		},
		"meta": map[string]any{"attempt": 1, "delivered_to": "https://example.com/webhooks"},
	})
}

func verifyTelnyx(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(telnyxSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", telnyxSignatureHeader)
	}
	sig, ok := decodeStdBase64(raw, ed25519.SignatureSize)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 64 bytes in standard base64", telnyxSignatureHeader)
	}
	tsRaw, _ := req.Headers.Get(telnyxTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", telnyxTimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not decimal unix seconds", telnyxTimestampHeader)
	}
	keyID, ok := matchEd25519Key(keys, sig, telnyxMessage(tsRaw, req.Body))
	if !ok {
		return Result{}, rejectNoEd25519Match(telnyxSignatureHeader, keys)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, telnyxDefaultTolerance)); err != nil {
		return Result{}, err
	}
	id, err := telnyxEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// telnyxEventID returns data.id. A data object of another record type than "event" that has
// no id (link_clicked carries only a message_id) falls back to the body hash; an event without
// data.id is refused.
func telnyxEventID(body []byte) (string, error) {
	top, err := jsonObject(body)
	if err != nil {
		return "", err
	}
	data := jsonObjectField(top, "data")
	if data == nil {
		return "", Reject(ReasonMissingEventID, `body has no "data" object`)
	}
	id, present, ok := jsonString(data, "id")
	switch {
	case ok && id != "":
		return id, nil
	case present:
		return "", Reject(ReasonMissingEventID, `body field "data.id" is not a non-empty string`)
	}
	if rt, _, ok := jsonString(data, "record_type"); ok && rt != "" && rt != "event" {
		return bodySHA256ID(body), nil
	}
	return "", Reject(ReasonMissingEventID, `body has no "data.id"`)
}

// telnyxMessage is "{timestamp}|{body}" with the header string verbatim, as the SDKs build it.
func telnyxMessage(ts string, body []byte) []byte {
	msg := make([]byte, 0, len(ts)+1+len(body))
	msg = append(msg, ts...)
	msg = append(msg, '|')
	return append(msg, body...)
}

// signTelnyx produces the two headers Telnyx sends. An account has one key pair, so only
// secrets[0] (the base64 seed) signs.
func signTelnyx(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("telnyx: sign needs a private key")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("telnyx: sign needs a timestamp at or after 1970")
	}
	priv, err := parseTelnyxSigningKey(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("telnyx: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	return Headers{
		{Name: telnyxSignatureHeader, Value: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, telnyxMessage(ts, in.Body)))},
		{Name: telnyxTimestampHeader, Value: ts},
	}, nil
}
