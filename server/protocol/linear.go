package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Linear: linear-signature is the hex HMAC-SHA256 of the raw body keyed with the webhook's
// signing secret. The send time is not in a header but in the signed body, as
// "webhookTimestamp" in unix milliseconds; @linear/sdk rejects it when more than one minute
// from now in either direction (linear/linear packages/sdk/src/webhooks/client.ts, verify).
// Linear also sends a linear-timestamp header, which newer SDKs fall back to when the body has
// no webhookTimestamp; it is not used here: it is outside the signature, so a replay of a
// captured delivery could carry a fresh one and pass the tolerance check. A body without
// webhookTimestamp is refused (missing timestamp). Linear-Delivery is a UUID naming the
// delivery.
const (
	linearName             = "linear"
	linearSignatureHeader  = "linear-signature"
	linearDeliveryHeader   = "Linear-Delivery"
	linearTimestampField   = "webhookTimestamp"
	linearDefaultTolerance = 60 * time.Second
)

var linearScheme = bodyMACScheme{
	headers: []string{linearSignatureHeader},
	newHash: sha256.New,
	size:    sha256.Size,
	enc:     digestHex,
}

var parseLinearSecret = sharedSecretParser("Linear webhook signing secret")

// Linear returns the protocol for Linear webhooks.
//
// Verify rejects, in this order: no linear-signature (missing signature); an empty value or
// not 64 lowercase hex digits (malformed signature); no key matching (signature mismatch); a
// body that is not a JSON object (malformed payload); no webhookTimestamp, or one that is not
// an integer (missing timestamp); webhookTimestamp more than the tolerance from Now either way
// (timestamp out of tolerance); no or empty Linear-Delivery (missing event id).
func Linear() *Protocol {
	return &Protocol{
		Name:             linearName,
		DisplayName:      "Linear",
		SignatureScheme:  `HMAC-SHA256 (hex) of the raw body, linear-signature; webhookTimestamp (ms) in the body`,
		SignsTimestamp:   true,
		DefaultTolerance: linearDefaultTolerance,
		IdentitySource:   "Linear-Delivery header (a UUID naming the delivery; whether it is kept on retries is NOT CONFIRMED)",
		DocsURL:          "https://linear.app/developers/webhooks",
		Retries: "Linear retries a delivery not answered 200 within 5 s up to 3 times, after about " +
			"1 minute, 1 hour and 6 hours (Linear's webhook docs; NOT CONFIRMED from a stored copy). " +
			"webhookTimestamp is the send time of each attempt — the SDK's one-minute check would " +
			"reject every retry otherwise — so each retry is signed afresh, and the 60 s default " +
			"(the SDK's, both directions) needs only to cover clock skew and transit.",
		ParseSecret:   parseLinearSecret,
		Verify:        verifyLinear,
		Sign:          signLinear,
		SignBody:      signLinearBody,
		ExampleSecret: exampleSecret("lin_wh_", 24, hex.EncodeToString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"action":"create","type":"Issue","data":{"id":` + jsonQuote(eventID) + `,"title":"Example"},"url":"https://linear.app/acme/issue/ENG-1","createdAt":"2026-01-01T00:00:00.000Z","webhookTimestamp":0}`)
		},
	}
}

func verifyLinear(req *Request, keys []Key, p Params) (Result, error) {
	keyID, err := linearScheme.authenticate(req, keys)
	if err != nil {
		return Result{}, err
	}
	ms, err := linearTimestamp(req.Body)
	if err != nil {
		return Result{}, err
	}
	if err := checkTimestampMillis(ms, p.Now, effectiveTolerance(p, linearDefaultTolerance)); err != nil {
		return Result{}, err
	}
	id, err := headerIdentity(req.Headers, linearDeliveryHeader)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// linearTimestamp reads the top-level webhookTimestamp (unix ms) of the body.
func linearTimestamp(body []byte) (int64, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return 0, Reject(ReasonMalformedPayload, "body is not a JSON object")
	}
	raw, ok := top[linearTimestampField]
	if !ok {
		return 0, Reject(ReasonMissingTimestamp, "body has no webhookTimestamp")
	}
	ms, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, Reject(ReasonMissingTimestamp, "body webhookTimestamp is not integer milliseconds")
	}
	return ms, nil
}

// signLinearBody stamps webhookTimestamp (in.Timestamp in ms) into the body, as Linear does
// when it sends; the other fields are kept (re-encoded in key order).
func signLinearBody(in SignInput, _ []string) ([]byte, error) {
	if err := checkSignTimestamp(linearName, in.Timestamp); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(in.Body, &top); err != nil || top == nil {
		return nil, errors.New("linear: the body to sign must be a JSON object")
	}
	top[linearTimestampField] = json.RawMessage(strconv.FormatInt(in.Timestamp.UnixMilli(), 10))
	return json.Marshal(top)
}

// signLinear sends linear-signature under the first secret (a webhook has one) and
// Linear-Delivery = in.EventID. The body must already carry webhookTimestamp (SignDelivery
// applies signLinearBody first).
func signLinear(in SignInput, secrets []string) (Headers, error) {
	keys, err := parseSigningKeys(linearName, secrets, parseLinearSecret)
	if err != nil {
		return nil, err
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("linear: %w for %s", ErrSignNeedsEventID, linearDeliveryHeader)
	}
	return Headers{
		{Name: linearSignatureHeader, Value: linearScheme.signature(in.Body, keys)},
		{Name: linearDeliveryHeader, Value: in.EventID},
	}, nil
}
