package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
	"unicode/utf8"
)

// Twitch EventSub (webhook transport) signs every message — notification,
// webhook_callback_verification and revocation alike — with
// Twitch-Eventsub-Message-Signature: sha256=<hex HMAC-SHA256 of message id + timestamp + body>,
// keyed with the secret the application chose when it created the subscription. The
// timestamp is the Twitch-Eventsub-Message-Timestamp header string (RFC3339, nanoseconds) as
// sent, concatenated with no separator.
const (
	twitchName             = "twitch"
	twitchSignatureHeader  = "Twitch-Eventsub-Message-Signature"
	twitchIDHeader         = "Twitch-Eventsub-Message-Id"
	twitchTimestampHeader  = "Twitch-Eventsub-Message-Timestamp"
	twitchTypeHeader       = "Twitch-Eventsub-Message-Type"
	twitchScheme           = "sha256"
	twitchVerification     = "webhook_callback_verification"
	twitchDefaultTolerance = 10 * time.Minute
)

// Twitch returns the protocol for Twitch EventSub webhook subscriptions.
//
// Verify rejects, in this order: no Twitch-Eventsub-Message-Signature (missing signature); a
// signature that is empty or not name=value (malformed signature); a scheme other than sha256
// (missing signature); a value that is not 64 lowercase hex digits (malformed signature); no or
// empty Twitch-Eventsub-Message-Id (missing event id — it is signed, so it is needed first); no
// or empty Twitch-Eventsub-Message-Timestamp, or one that is not RFC3339 (missing timestamp); no
// key matching (signature mismatch); the timestamp more than the tolerance away from Now in
// either direction (timestamp out of tolerance); a webhook_callback_verification whose body is
// not a JSON object with a non-empty string "challenge" (malformed payload).
//
// An authenticated webhook_callback_verification is answered with the challenge as
// text/plain. Notifications and revocations are deliveries identified by the message id.
func Twitch() *Protocol {
	return &Protocol{
		Name:             twitchName,
		DisplayName:      "Twitch EventSub",
		SignatureScheme:  "HMAC-SHA256 (hex) of message id + timestamp + body, Twitch-Eventsub-Message-Signature sha256",
		SignsTimestamp:   true,
		DefaultTolerance: twitchDefaultTolerance,
		IdentitySource:   "Twitch-Eventsub-Message-Id header (the same when Twitch resends a message)",
		DocsURL:          "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/",
		Retries: "Twitch delivers at least once and resends a message it is unsure you received, with the same " +
			"message id (and a Twitch-Eventsub-Message-Retry counter); the schedule and whether a resend " +
			"carries a fresh timestamp and signature are not documented. Twitch's replay guidance is to " +
			"reject messages older than 10 minutes, so the default tolerance is 10 minutes; repeated slow " +
			"answers revoke the subscription (notification_failures_exceeded).",
		ParseSecret:   parseTwitchSecret,
		Verify:        verifyTwitch,
		Sign:          signTwitch,
		ExampleSecret: exampleTwitchSecret,
		ExampleBody:   twitchExampleBody,
	}
}

// parseTwitchSecret keeps the subscription secret's bytes. Twitch requires 10 to 100
// characters, so anything else cannot be a secret Twitch accepted.
func parseTwitchSecret(secret string) ([]byte, error) {
	if n := utf8.RuneCountInString(secret); n < 10 || n > 100 {
		return nil, invalidSecret("a Twitch EventSub secret is 10 to 100 characters")
	}
	return []byte(secret), nil
}

// exampleTwitchSecret is 32 hex digits, a secret an application might choose.
func exampleTwitchSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b)
	return s, s, nil
}

// twitchExampleBody is a channel.follow notification; the identity travels in the header.
func twitchExampleBody(eventID string) []byte {
	return marshalJSONUnescaped(map[string]any{
		"subscription": map[string]any{
			"id":         "f1c2a387-161a-49f9-a165-0f21d7a4e1c4",
			"type":       "channel.follow",
			"version":    "2",
			"status":     "enabled",
			"cost":       0,
			"condition":  map[string]any{"broadcaster_user_id": "1337", "moderator_user_id": "1337"},
			"transport":  map[string]any{"method": "webhook", "callback": "https://example.com/webhooks/callback"},
			"created_at": "2019-11-16T10:11:12.634234626Z",
		},
		"event": map[string]any{
			"user_id":                "1234",
			"user_login":             "cool_user",
			"user_name":              "Cool_User",
			"broadcaster_user_id":    "1337",
			"broadcaster_user_login": "cooler_user",
			"broadcaster_user_name":  "Cooler_User",
			"followed_at":            "2020-07-15T18:16:11.17106713Z",
			"note":                   eventID,
		},
	})
}

// parseTwitchSignature decodes "sha256=<hex>". Its errors are *Rejection.
func parseTwitchSignature(v string) ([]byte, error) {
	if v == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is empty", twitchSignatureHeader)
	}
	scheme, digest, ok := cutByte(v, '=')
	if !ok || scheme == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is not sha256=<hex>", twitchSignatureHeader)
	}
	if scheme != twitchScheme {
		return nil, Reject(ReasonMissingSignature, "%s uses an unsupported scheme (want sha256=)", twitchSignatureHeader)
	}
	sig, ok := decodeLowerHex(digest, sha256.Size)
	if !ok {
		return nil, Reject(ReasonMalformedSignature, "%s is not sha256= and 64 lowercase hex digits", twitchSignatureHeader)
	}
	return sig, nil
}

// parseTwitchTimestamp parses the RFC3339 header; fractional seconds are optional.
func parseTwitchTimestamp(v string) (time.Time, bool) {
	if v == "" || len(v) > 64 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

func verifyTwitch(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(twitchSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", twitchSignatureHeader)
	}
	sig, err := parseTwitchSignature(raw)
	if err != nil {
		return Result{}, err
	}
	id, _ := req.Headers.Get(twitchIDHeader)
	if id == "" {
		return Result{}, Reject(ReasonMissingEventID, "no %s header", twitchIDHeader)
	}
	tsRaw, _ := req.Headers.Get(twitchTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", twitchTimestampHeader)
	}
	ts, ok := parseTwitchTimestamp(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not an RFC3339 time", twitchTimestampHeader)
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, twitchMessage(id, tsRaw, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(twitchSignatureHeader, 0, keys)
	}
	if err := checkSubsecondTimestamp(ts, p.Now, effectiveTolerance(p, twitchDefaultTolerance)); err != nil {
		return Result{}, err
	}
	if typ, _ := req.Headers.Get(twitchTypeHeader); typ == twitchVerification {
		top, err := jsonObject(req.Body)
		if err != nil {
			return Result{}, err
		}
		challenge, _, ok := jsonString(top, "challenge")
		if !ok || challenge == "" {
			return Result{}, Reject(ReasonMalformedPayload, `challenge request body has no "challenge" string`)
		}
		return Result{KeyID: keyID, Handshake: echoReply(challenge)}, nil
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// twitchMessage writes id + timestamp + body, the timestamp header string verbatim.
func twitchMessage(id, ts string, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(id))
		mac.Write([]byte(ts))
		mac.Write(body)
	}
}

// checkSubsecondTimestamp is checkTimestamp for a timestamp with sub-second precision: ts is
// accepted when |Now - ts| <= tol, boundaries included. The detail gives whole seconds,
// rounded up.
func checkSubsecondTimestamp(ts, now time.Time, tol time.Duration) error {
	d := now.Sub(ts)
	switch {
	case d > tol:
		return Reject(ReasonTimestampOutOfTolerance,
			"timestamp is %ds old, more than the %s tolerance", ceilSeconds(d), formatTolerance(tol))
	case d < -tol:
		// ts.Sub(now), not -d: negating a saturated minimum Duration overflows back to itself.
		return Reject(ReasonTimestampOutOfTolerance,
			"timestamp is %ds in the future, more than the %s tolerance", ceilSeconds(ts.Sub(now)), formatTolerance(tol))
	}
	return nil
}

// signTwitch produces the headers Twitch sends with a notification: the message id, retry
// counter, type, timestamp (RFC3339 with nanoseconds, UTC), signature and, when the body names
// them, the subscription type and version. Each subscription has one secret, so only
// secrets[0] signs.
func signTwitch(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("twitch: sign needs a secret")
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("twitch: %w for Twitch-Eventsub-Message-Id (it is signed)", ErrSignNeedsEventID)
	}
	if in.Timestamp.IsZero() {
		return nil, errors.New("twitch: sign needs a timestamp")
	}
	key, err := parseTwitchSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("twitch: %w", err)
	}
	ts := in.Timestamp.UTC().Format(time.RFC3339Nano)
	sum := hmacSum(sha256.New, key, twitchMessage(in.EventID, ts, in.Body))
	h := Headers{
		{Name: twitchIDHeader, Value: in.EventID},
		{Name: "Twitch-Eventsub-Message-Retry", Value: "0"},
		{Name: twitchTypeHeader, Value: "notification"},
		{Name: twitchSignatureHeader, Value: twitchScheme + "=" + hex.EncodeToString(sum)},
		{Name: twitchTimestampHeader, Value: ts},
	}
	if top, err := jsonObject(in.Body); err == nil {
		sub := jsonObjectField(top, "subscription")
		if typ, _, ok := jsonString(sub, "type"); ok && typ != "" && !strings.ContainsAny(typ, "\r\n") {
			h = append(h, Header{Name: "Twitch-Eventsub-Subscription-Type", Value: typ})
		}
		if v, _, ok := jsonString(sub, "version"); ok && v != "" && !strings.ContainsAny(v, "\r\n") {
			h = append(h, Header{Name: "Twitch-Eventsub-Subscription-Version", Value: v})
		}
	}
	return h, nil
}
