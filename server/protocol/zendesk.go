package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// Zendesk signs each webhook request: X-Zendesk-Webhook-Signature is
// base64(HMAC-SHA256(signing secret, X-Zendesk-Webhook-Signature-Timestamp + body)), the
// timestamp an RFC 3339 time such as 2021-03-25T05:09:27Z, keyed with the secret's characters
// (it looks like base64 but is not decoded).
const (
	zendeskName             = "zendesk"
	zendeskSignatureHeader  = "X-Zendesk-Webhook-Signature"
	zendeskTimestampHeader  = "X-Zendesk-Webhook-Signature-Timestamp"
	zendeskInvocationHeader = "X-Zendesk-Webhook-Invocation-Id"
	zendeskDefaultTolerance = 10 * time.Minute
	// zendeskEventTypePrefix begins the "type" of every event-subscription payload.
	zendeskEventTypePrefix = "zen:event-type:"
	// zendeskTestSecret is the fixed secret Zendesk signs test requests with, sent from the
	// webhook builder before a webhook exists: base64 of "this_secret_is_for_testing_only".
	zendeskTestSecret = "dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ=="
)

// Zendesk returns the protocol for Zendesk webhooks (event subscriptions, triggers and
// automations). A secret is the webhook's signing secret; several may be configured while it
// is reset. The public test secret is refused: anyone can sign with it.
//
// The identity is the X-Zendesk-Webhook-Invocation-Id header (one invocation, retried as
// several attempts; Zendesk documents it on all webhook requests); else the top-level "id" of
// an event-subscription body (one whose "type" begins "zen:event-type:"); else
// "body-sha256:" and the hex SHA-256 of the raw body. Trigger and automation bodies are
// free-form, so the header is what identifies them.
//
// Verify rejects, in this order: no signature header (missing signature); a signature that
// is not 32 bytes of padded base64 (malformed signature); no or non-RFC 3339 timestamp header
// (missing timestamp); no key matching (signature mismatch); the timestamp more than the
// tolerance from Now in either direction. GET and DELETE requests carry no body, and are
// verified over the timestamp alone, as Zendesk signs them.
func Zendesk() *Protocol {
	return &Protocol{
		Name:             zendeskName,
		DisplayName:      "Zendesk",
		SignatureScheme:  "HMAC-SHA256 (base64) of timestamp + body, X-Zendesk-Webhook-Signature",
		SignsTimestamp:   true,
		DefaultTolerance: zendeskDefaultTolerance,
		IdentitySource:   "X-Zendesk-Webhook-Invocation-Id header; else body JSON \"id\" of an event-subscription body (\"type\" zen:event-type:*, never a trigger's free-form body); else body-sha256 of the raw body",
		DocsURL:          "https://developer.zendesk.com/documentation/webhooks/verifying/",
		Retries: "Zendesk retries some failures (certain status codes and timeouts) as attempts of one invocation, " +
			"sharing X-Zendesk-Webhook-Invocation-Id, and opens a circuit breaker on repeated failures. Whether an attempt " +
			"is signed afresh was not confirmed, so the default tolerance is 10 minutes to cover attempts that reuse the " +
			"first signature; the invocation id deduplicates them.",
		ParseSecret:   parseZendeskSecret,
		Verify:        verifyZendesk,
		Sign:          signZendesk,
		ExampleSecret: exampleZendeskSecret,
		ExampleBody:   zendeskExampleBody,
	}
}

func parseZendeskSecret(secret string) ([]byte, error) {
	switch {
	case secret == "":
		return nil, invalidSecret("the Zendesk signing secret is empty")
	case strings.TrimSpace(secret) != secret:
		return nil, invalidSecret("the Zendesk signing secret has leading or trailing whitespace")
	case secret == zendeskTestSecret:
		return nil, invalidSecret("this is Zendesk's public test secret, which anyone can sign with; use the webhook's own signing secret")
	}
	return []byte(secret), nil
}

// zendeskMessage writes the timestamp as received, then the body.
func zendeskMessage(ts string, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(ts))
		mac.Write(body)
	}
}

func verifyZendesk(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(zendeskSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", zendeskSignatureHeader)
	}
	sig, ok := decodeStdBase64(raw, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 32 bytes of padded base64", zendeskSignatureHeader)
	}
	tsRaw, _ := req.Headers.Get(zendeskTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", zendeskTimestampHeader)
	}
	ts, err := time.Parse(time.RFC3339Nano, tsRaw)
	if err != nil {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not an RFC 3339 time", zendeskTimestampHeader)
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, zendeskMessage(tsRaw, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(zendeskSignatureHeader, 0, keys)
	}
	if err := checkGenericTime(ts, p.Now, effectiveTolerance(p, zendeskDefaultTolerance)); err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: zendeskEventID(req)}, nil
}

// zendeskEventID is the invocation id header, else the "id" of an event-subscription body,
// else the body hash. Only a body whose "type" is a "zen:event-type:" names its event in the
// top-level "id" (the ticket or user is in "detail"); a trigger or automation body is written
// by the admin and may carry the ticket's id there, which would make every delivery
// about one ticket the same event.
func zendeskEventID(req *Request) string {
	if v, _ := req.Headers.Get(zendeskInvocationHeader); v != "" && len(v) <= 400 {
		return v
	}
	var ev struct {
		Type string          `json:"type"`
		ID   json.RawMessage `json:"id"`
	}
	var s string
	var n json.Number
	if json.Unmarshal(req.Body, &ev) == nil && strings.HasPrefix(ev.Type, zendeskEventTypePrefix) && len(ev.ID) > 0 && len(ev.ID) <= 400 {
		if json.Unmarshal(ev.ID, &s) == nil && s != "" {
			return s
		}
		if json.Unmarshal(ev.ID, &n) == nil {
			return n.String()
		}
	}
	return bodySHA256ID(req.Body)
}

// signZendesk signs with the first secret (a webhook has one signing secret) and sends
// in.EventID as the invocation id when given.
func signZendesk(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("zendesk: sign needs the signing secret")
	}
	if in.Timestamp.IsZero() {
		return nil, errors.New("zendesk: sign needs a timestamp")
	}
	key := []byte(secrets[0])
	if secrets[0] != zendeskTestSecret { // Sign may reproduce Zendesk's test requests
		var err error
		if key, err = parseZendeskSecret(secrets[0]); err != nil {
			return nil, fmt.Errorf("zendesk: %w", err)
		}
	}
	ts := in.Timestamp.UTC().Format(time.RFC3339)
	h := Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: zendeskTimestampHeader, Value: ts},
		{Name: zendeskSignatureHeader, Value: base64.StdEncoding.EncodeToString(hmacSum(sha256.New, key, zendeskMessage(ts, in.Body)))},
	}
	if in.EventID != "" {
		h = append(h, Header{Name: zendeskInvocationHeader, Value: in.EventID})
	}
	return h, nil
}

// exampleZendeskSecret is base64 of 32 random bytes, the shape of a Zendesk signing secret.
func exampleZendeskSecret() (string, string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", "", err
	}
	s := base64.StdEncoding.EncodeToString(b)
	return s, s, nil
}

// zendeskExampleBody is a user.created event whose id is the event id.
func zendeskExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"account_id":123456,"detail":{"id":"1","email":"user@example.com"},"event":{},"id":` + string(id) +
		`,"subject":"zen:user:1","time":"2026-01-02T03:04:05.678Z","type":"zen:event-type:user.created","zendesk_event_version":"2022-11-06"}`)
}
