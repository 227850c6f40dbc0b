package protocol

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Front application webhooks sign "{x-front-request-timestamp}:{body}", the timestamp in Unix
// milliseconds, with HMAC-SHA256 keyed with the application's signing key and send the base64
// digest in x-front-signature. Saving the webhook configuration sends a signed validation
// request carrying x-front-challenge, which must be answered 200 with the challenge. Sources:
// https://dev.frontapp.com/docs/application-webhooks ("Application webhook validation",
// "Verifying integrity") and https://dev.frontapp.com/docs/security-1 (5 minutes recommended).
// Rule webhooks, which sign the body alone with HMAC-SHA1 and the API secret, are a different
// scheme and not covered.
const (
	frontappName             = "frontapp"
	frontappSignatureHeader  = "x-front-signature"
	frontappTimestampHeader  = "x-front-request-timestamp"
	frontappChallengeHeader  = "x-front-challenge"
	frontappDefaultTolerance = 300 * time.Second
	frontappMaxChallenge     = 256
)

// FrontApp returns the protocol for Front application webhooks.
//
// Verify rejects, in this order: no x-front-signature (missing signature); no
// x-front-request-timestamp (missing timestamp); a timestamp that is not decimal milliseconds or
// a signature that is not 32 bytes of padded base64 (malformed signature); no key matching
// (signature mismatch); a timestamp more than the tolerance from Now in either direction,
// compared to the millisecond (timestamp out of tolerance). Then a request carrying
// x-front-challenge is the (signed) validation handshake, answered 200 with the challenge as a
// text/plain body; a challenge that is empty, longer than 256 bytes or not visible ASCII is a
// malformed payload.
func FrontApp() *Protocol {
	return &Protocol{
		Name:             frontappName,
		DisplayName:      "Front",
		SignatureScheme:  `HMAC-SHA256 (base64) of "{x-front-request-timestamp}:{body}", timestamp in milliseconds; signed x-front-challenge handshake`,
		SignsTimestamp:   true,
		DefaultTolerance: frontappDefaultTolerance,
		IdentitySource:   `body JSON field "payload"."id" (the event's evt_... id) when present, else sha256 of the raw body ("body-sha256:<hex>")`,
		DocsURL:          "https://dev.frontapp.com/docs/application-webhooks",
		Retries: "Front's docs recommend rejecting requests older than 5 minutes, which presumes each " +
			"attempt is signed with a fresh timestamp; the retry schedule is not documented in the " +
			"sources read. 300 s therefore covers transit and clock skew.",
		ParseSecret:   sharedSecretParser("Front application signing key"),
		Verify:        verifyFrontApp,
		Sign:          signFrontApp,
		ExampleSecret: sharedExample(""),
		ExampleBody:   frontappExampleBody,
	}
}

func verifyFrontApp(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	sigValue, ok := req.Headers.Get(frontappSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", frontappSignatureHeader)
	}
	tsValue, ok := req.Headers.Get(frontappTimestampHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", frontappTimestampHeader)
	}
	ms, ok := parseUnixSeconds(tsValue) // the same digit rules, in milliseconds
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not decimal Unix milliseconds", frontappTimestampHeader)
	}
	sig, ok := decodeStdBase64(sigValue, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not %s", frontappSignatureHeader, digestBase64.describe(sha256.Size))
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, macMessage(req.Body, strconv.FormatInt(ms, 10), ":"))
	if !ok {
		return Result{}, rejectNoMatch(frontappSignatureHeader, 0, keys)
	}
	// Compared to the millisecond: ms/1000 against Now would refuse a delivery up to a second
	// inside the old edge and accept one up to a second beyond the future edge.
	if err := checkTimestampMillisRoundedUp(ms, p.Now, effectiveTolerance(p, frontappDefaultTolerance)); err != nil {
		return Result{}, err
	}
	if challenge, ok := req.Headers.Get(frontappChallengeHeader); ok {
		return frontappHandshake(keyID, challenge)
	}
	return Result{KeyID: keyID, EventID: frontappEventID(req.Body)}, nil
}

// frontappHandshake answers the authenticated validation request with its challenge.
func frontappHandshake(keyID, challenge string) (Result, error) {
	if challenge == "" || len(challenge) > frontappMaxChallenge {
		return Result{}, Reject(ReasonMalformedPayload, "%s must be 1 to %d characters", frontappChallengeHeader, frontappMaxChallenge)
	}
	for i := 0; i < len(challenge); i++ {
		if challenge[i] <= ' ' || challenge[i] > '~' {
			return Result{}, Reject(ReasonMalformedPayload, "%s has a character that is not visible ASCII", frontappChallengeHeader)
		}
	}
	return Result{KeyID: keyID, Handshake: echoReply(challenge)}, nil
}

// frontappEventID is payload.id when the body has one, else the body's hash.
func frontappEventID(body []byte) string {
	if id, err := jsonBodyString(body, "payload", "id"); err == nil {
		return id
	}
	return bodySHA256ID(body)
}

// signFrontApp produces the headers Front sends. An application has one signing key, so only
// secrets[0] signs.
func signFrontApp(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("frontapp: sign needs a secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.UnixMilli() < 0 {
		return nil, errors.New("frontapp: sign needs a timestamp at or after 1970")
	}
	key, err := sharedSecretParser("Front application signing key")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("frontapp: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: frontappTimestampHeader, Value: ts},
		{Name: frontappSignatureHeader, Value: digestBase64.encode(hmacSum(sha256.New, key, macMessage(in.Body, ts, ":")))},
	}, nil
}

// frontappExampleBody is an inbound_received application event.
func frontappExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"type":"inbound_received","authorization":{"id":"cmp_abc"},"payload":{"_links":{"self":"https://api2.frontapp.com/events/evt_55c8c149"},"id":` + string(id) + `,"type":"inbound","emitted_at":1767647318.123,"conversation":{"id":"cnv_55c8c149","subject":"Hello"}}}`)
}
