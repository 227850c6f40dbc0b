package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"time"
)

// Mailgun puts its signature in the body: JSON webhooks carry
// {"signature":{"timestamp":"<unix s>","token":"<50 random chars>","signature":"<hex>"},
// "event-data":{...}}, legacy form-encoded webhooks carry timestamp, token and signature as
// top-level fields. signature = hex HMAC-SHA256, keyed with the HTTP webhook signing key, of
// timestamp + token. The event data is NOT covered by the signature.
const (
	mailgunName = "mailgun"
	// mailgunDefaultTolerance covers Mailgun's retry schedule (5 min, 10 min, 15 min, 1 h, 2 h,
	// 4 h: "during 8 hours") in case retries are not re-signed, plus margin.
	mailgunDefaultTolerance = 8*time.Hour + 30*time.Minute
	mailgunTokenLen         = 50
)

// Mailgun returns the protocol for Mailgun event webhooks (JSON) and legacy form-encoded
// webhooks. Multipart deliveries (inbound routes) are not supported.
//
// Because Mailgun signs only timestamp + token, the event data is not authenticated: whoever
// sees one genuine delivery can send other event data with its signature until the timestamp
// leaves the tolerance. The protocol is therefore marked StaticCredential (the body is not
// authenticated), and the identity is the signed token rather than the unsigned event-data.id,
// so any such variant of a delivery is the same event as the genuine one and is never stored
// as a new one.
//
// Verify rejects, in this order: a body that is neither a JSON object nor a form (malformed
// payload); no signature object or field (missing signature); signature fields that are not
// strings, an empty token, or a signature that is not 64 lowercase hex digits (malformed
// signature); an absent or non-decimal timestamp (missing timestamp); no key matching the
// signature or, on a subaccount's event, its parent-signature (malformed signature if the
// parent-signature is not a string of 64 lowercase hex digits, else signature mismatch); the
// timestamp more than the tolerance from Now either way (timestamp out of tolerance).
func Mailgun() *Protocol {
	return &Protocol{
		Name:             mailgunName,
		DisplayName:      "Mailgun",
		SignatureScheme:  `HMAC-SHA256 (hex) of timestamp + token, in the body's "signature" object (or its parent-signature, made with the primary account's key for a subaccount's events; event data unsigned)`,
		SignsTimestamp:   true,
		DefaultTolerance: mailgunDefaultTolerance,
		IdentitySource: `the signed signature.token (random, 50 characters), not the unsigned event-data.id: a delivery whose ` +
			`event data was swapped under a captured signature is then the same event as the genuine one`,
		StaticCredential: true,
		DocsURL:          "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
		Retries: "On any status other than 200 or 406, Mailgun retries (except delivery notifications) \"during 8 hours\" " +
			"at 5 min, 10 min, 15 min, 1 h, 2 h and 4 h; whether a retry is re-signed is not documented, so the default " +
			"tolerance is 8.5 hours, both directions. A retry that keeps its token is a duplicate; one re-signed with a new " +
			"token gets a new identity. 406 means \"rejected, do not retry\": hookverify's replies never use it.",
		ParseSecret:   parseMailgunSecret,
		Verify:        verifyMailgun,
		Sign:          signMailgun,
		SignBody:      signMailgunBody,
		ExampleSecret: exampleMailgunSecret,
		ExampleBody:   exampleMailgunBody,
	}
}

// parseMailgunSecret keeps the signing key's bytes: Mailgun keys the HMAC with the string.
func parseMailgunSecret(secret string) ([]byte, error) {
	return parseTokenSecret("the Mailgun HTTP webhook signing key", secret)
}

// exampleMailgunSecret is a webhook signing key as the Control Panel shows one: 32 hex digits
// (older accounts show "key-" + 32 hex digits, which works the same way).
func exampleMailgunSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b)
	return s, s, nil
}

// exampleMailgunBody is an unsigned "delivered" event; SignBody adds the signature object.
func exampleMailgunBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"event-data":{"id":` + string(id) + `,"event":"delivered","timestamp":1767000000.123456,` +
		`"recipient":"alice@example.com","message":{"headers":{"message-id":"20260101000000.1.ABCDEF@mg.example.com"}}}}`)
}

// mailgunSignature is the signature object as found in the body.
type mailgunSignature struct {
	timestamp, token, signature string
	// parent is the parent-signature a subaccount's event carries beside its own signature:
	// the same HMAC of timestamp + token under the primary account's signing key, so that one
	// endpoint keyed with the primary key verifies every subaccount ("Securing Webhooks").
	parent    string
	hasParent bool
}

// mailgunFind extracts the signature fields from a JSON or form body. Its errors are *Rejection.
func mailgunFind(body []byte) (mailgunSignature, error) {
	var s mailgunSignature
	trimmed := bytes.TrimLeft(body, jsonSpace)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		top, err := jsonObject(body)
		if err != nil {
			return s, err
		}
		if _, ok := top["signature"]; !ok {
			return s, Reject(ReasonMissingSignature, `body has no "signature" object`)
		}
		obj := jsonObjectField(top, "signature")
		if obj == nil {
			return s, Reject(ReasonMalformedSignature, `body field "signature" is not an object`)
		}
		var present, ok bool
		if s.signature, present, ok = jsonString(obj, "signature"); !present {
			return s, Reject(ReasonMissingSignature, `the "signature" object has no "signature" field`)
		} else if !ok {
			return s, Reject(ReasonMalformedSignature, `signature.signature is not a string`)
		}
		if s.token, _, ok = jsonString(obj, "token"); !ok {
			return s, Reject(ReasonMalformedSignature, `signature.token is absent or not a string`)
		}
		if s.timestamp, present, ok = jsonString(obj, "timestamp"); present && !ok {
			return s, Reject(ReasonMissingTimestamp, `signature.timestamp is not a string of decimal seconds`)
		}
		s.parent, s.hasParent, _ = jsonString(obj, "parent-signature") // not a string: "" is malformed
		return s, nil
	}
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return s, Reject(ReasonMalformedPayload, "body is neither a JSON object nor application/x-www-form-urlencoded")
	}
	if _, ok := values["signature"]; !ok {
		return s, Reject(ReasonMissingSignature, "form body has no signature field")
	}
	for _, f := range []string{"signature", "token", "timestamp"} {
		if len(values[f]) > 1 {
			return s, Reject(ReasonMalformedSignature, "form body repeats the %s field", f)
		}
	}
	return mailgunSignature{timestamp: values.Get("timestamp"), token: values.Get("token"), signature: values.Get("signature")}, nil
}

// mailgunMessage writes timestamp + token, as mailgun-go's VerifyWebhookSignature does.
func mailgunMessage(ts, token string) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(ts))
		mac.Write([]byte(token))
	}
}

func verifyMailgun(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	s, err := mailgunFind(req.Body)
	if err != nil {
		return Result{}, err
	}
	sig, ok := decodeLowerHex(s.signature, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "the signature is not 64 lowercase hex digits")
	}
	if s.token == "" {
		return Result{}, Reject(ReasonMalformedSignature, "the token is empty")
	}
	if s.timestamp == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no signature timestamp")
	}
	ts, ok := parseUnixSeconds(s.timestamp)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "the signature timestamp is not decimal unix seconds")
	}
	sigs, malformed := [][]byte{sig}, 0
	if s.hasParent {
		if parent, ok := decodeLowerHex(s.parent, sha256.Size); ok {
			sigs = append(sigs, parent)
		} else {
			malformed++
		}
	}
	keyID, ok := matchKey(keys, sigs, sha256.New, mailgunMessage(s.timestamp, s.token))
	if !ok {
		return Result{}, rejectNoMatch("the body's signature", malformed, keys)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, mailgunDefaultTolerance)); err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: s.token}, nil
}

// signMailgunBody embeds a fresh signature (timestamp = in.Timestamp, a random 50-character
// token) in in.Body: into the JSON object's "signature" field, or as form fields. Mailgun has
// one signing key per account, so only secrets[0] signs. A JSON body is re-encoded with its
// keys sorted.
func signMailgunBody(in SignInput, secrets []string) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("mailgun: sign needs the webhook signing key")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("mailgun: sign needs a timestamp at or after 1970")
	}
	key, err := parseMailgunSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("mailgun: %w", err)
	}
	raw, err := randomBytes(mailgunTokenLen / 2)
	if err != nil {
		return nil, err
	}
	return mailgunEmbed(in.Body, key, strconv.FormatInt(in.Timestamp.Unix(), 10), hex.EncodeToString(raw))
}

// mailgunEmbed signs timestamp + token with key and puts the three fields into body.
func mailgunEmbed(body, key []byte, ts, token string) ([]byte, error) {
	sig := hex.EncodeToString(hmacSum(sha256.New, key, mailgunMessage(ts, token)))
	trimmed := bytes.TrimLeft(body, jsonSpace)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil || top == nil {
			return nil, errors.New("mailgun: the body is not a JSON object")
		}
		obj, err := json.Marshal(map[string]string{"timestamp": ts, "token": token, "signature": sig})
		if err != nil {
			return nil, err
		}
		top["signature"] = obj
		return json.Marshal(top)
	}
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errors.New("mailgun: the body is neither a JSON object nor a form")
	}
	values.Set("timestamp", ts)
	values.Set("token", token)
	values.Set("signature", sig)
	return []byte(values.Encode()), nil
}

// signMailgun returns the headers Mailgun sends beside a signed body: only its Content-Type,
// since the signature is in the body (see SignBody).
func signMailgun(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("mailgun: sign needs the webhook signing key")
	}
	if _, err := parseMailgunSecret(secrets[0]); err != nil {
		return nil, fmt.Errorf("mailgun: %w", err)
	}
	trimmed := bytes.TrimLeft(in.Body, jsonSpace)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return Headers{{Name: "Content-Type", Value: "application/json"}}, nil
	}
	return Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, nil
}
