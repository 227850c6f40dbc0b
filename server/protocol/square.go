package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
)

// Square signs each webhook event notification with x-square-hmacsha256-signature: base64
// HMAC-SHA256, keyed with the subscription's signature key (its string bytes), of the
// subscription's notification URL immediately followed by the raw body. Nothing is timed;
// event_id in the body is Square's idempotency value.
const (
	squareName            = "square"
	squareSignatureHeader = "x-square-hmacsha256-signature"
	// squareLegacyHeader is the HMAC-SHA1 signature Square still sends beside the SHA-256 one;
	// it is never enough on its own here.
	squareLegacyHeader = "x-square-signature"
)

// Square returns the protocol for Square webhook subscriptions.
//
// The notification URL is signed, so the request URL (or the endpoint's public_url) must be
// the subscription's notification URL byte for byte. Unlike square-go-sdk's VerifySignature,
// which returns success for an empty body without looking at the signature, an empty body is
// always rejected.
//
// Verify rejects, in this order: no x-square-hmacsha256-signature, even when the legacy SHA-1
// x-square-signature is present (missing signature); a value that is not the padded standard
// base64 of 32 bytes (malformed signature); no request URL (signature mismatch: nothing can
// match); no key matching (signature mismatch); an empty body or one that is not a JSON object
// (malformed payload); no non-empty string event_id (missing event id).
func Square() *Protocol {
	return &Protocol{
		Name:            squareName,
		DisplayName:     "Square",
		SignatureScheme: "HMAC-SHA256 (base64) of notification URL + body, x-square-hmacsha256-signature",
		SignsTimestamp:  false,
		IdentitySource:  `body JSON field "event_id" (Square's idempotency value, the same on every retry)`,
		NeedsURL:        true,
		DocsURL:         "https://developer.squareup.com/docs/webhooks/step3validate",
		Retries: "Square retries a notification that gets no 2xx within 10 seconds with exponential backoff, for up to " +
			"24 hours (some Square pages say 72 hours); a retry carries the same event_id and the same signature. " +
			"No timestamp is signed, so there is no tolerance.",
		ParseSecret:   parseSquareSecret,
		Verify:        verifySquare,
		Sign:          signSquare,
		ExampleSecret: exampleSquareSecret,
		ExampleBody:   exampleSquareBody,
	}
}

// parseSquareSecret keeps the signature key's bytes: Square keys the HMAC with the string.
func parseSquareSecret(secret string) ([]byte, error) {
	return parseTokenSecret("the Square signature key", secret)
}

// exampleSquareSecret is a signature key as the Developer Console shows one: 16 random bytes
// in unpadded base64url (22 characters, like "Ibxx_5AKakO-3qeNVR61Dw").
func exampleSquareSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	return s, s, nil
}

// exampleSquareBody is a payment.updated notification with the event id as event_id.
func exampleSquareBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":` + string(id) +
		`,"created_at":"2026-01-01T00:00:00.000Z","data":{"type":"payment","id":"KkAkhdMsgzn59SM8A89WgKwekxLZY",` +
		`"object":{"payment":{"id":"KkAkhdMsgzn59SM8A89WgKwekxLZY","status":"COMPLETED"}}}}`)
}

// squareMessage writes the notification URL then the body.
func squareMessage(u string, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(u))
		mac.Write(body)
	}
}

func verifySquare(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(squareSignatureHeader)
	if !ok {
		if _, legacy := req.Headers.Get(squareLegacyHeader); legacy {
			return Result{}, Reject(ReasonMissingSignature, "no %s header (the legacy SHA-1 %s is not accepted)", squareSignatureHeader, squareLegacyHeader)
		}
		return Result{}, Reject(ReasonMissingSignature, "no %s header", squareSignatureHeader)
	}
	sig, ok := decodeStdBase64(raw, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not the base64 of a 32-byte HMAC-SHA256", squareSignatureHeader)
	}
	if req.URL == "" {
		return Result{}, Reject(ReasonSignatureMismatch, "no request URL, so no signature can match (set the endpoint's public_url)")
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, squareMessage(req.URL, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(squareSignatureHeader, 0, keys)
	}
	if len(req.Body) == 0 {
		return Result{}, Reject(ReasonMalformedPayload, "body is empty")
	}
	top, err := jsonObject(req.Body)
	if err != nil {
		return Result{}, err
	}
	id, present, isString := jsonString(top, "event_id")
	switch {
	case !present:
		return Result{}, Reject(ReasonMissingEventID, `body has no "event_id" field`)
	case !isString:
		return Result{}, Reject(ReasonMissingEventID, `body field "event_id" is not a string`)
	case id == "":
		return Result{}, Reject(ReasonMissingEventID, `body field "event_id" is empty`)
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// signSquare produces the x-square-hmacsha256-signature Square sends for in.Body delivered to
// in.URL. A subscription has one signature key, so only secrets[0] signs. The legacy SHA-1
// header is not produced.
func signSquare(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("square: sign needs the signature key")
	}
	if in.URL == "" {
		return nil, errors.New("square: sign needs the notification URL")
	}
	key, err := parseSquareSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("square: %w", err)
	}
	sig := base64.StdEncoding.EncodeToString(hmacSum(sha256.New, key, squareMessage(in.URL, in.Body)))
	return Headers{{Name: squareSignatureHeader, Value: sig}}, nil
}
