package protocol

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Discord signs interactions and Webhook Events sent to an app's URLs with Ed25519:
// X-Signature-Ed25519 is the hex signature of X-Signature-Timestamp + raw body (no separator),
// verifiable with the application's public key as the Developer Portal shows it (64 hex digits).
const (
	discordName             = "discord"
	discordSignatureHeader  = "X-Signature-Ed25519"
	discordTimestampHeader  = "X-Signature-Timestamp"
	discordDefaultTolerance = 15 * time.Minute
)

// Discord payload types this protocol tells apart.
const (
	discordWebhookPing  = 0 // Webhook Events PING: answer 204, empty body
	discordTypeOne      = 1 // interaction PING (answer PONG) or a webhook event (has "event")
	discordPongResponse = `{"type":1}`
)

// Discord returns the protocol for Discord interactions endpoints and Webhook Events URLs.
//
// Verify rejects, in this order: no X-Signature-Ed25519 (missing signature); a signature that
// is not 128 lowercase hex digits (malformed signature); no or empty X-Signature-Timestamp, or
// one that is not decimal unix seconds (missing timestamp); no public key verifying the
// signature (signature mismatch); the timestamp more than the tolerance away from Now in either
// direction (timestamp out of tolerance); a body that is not a JSON object with an integer
// "type" (malformed payload); an interaction other than PING without a non-empty string "id"
// (missing event id).
//
// Authenticated PINGs are answered, never stored: an interaction PING (type 1 without an
// "event") with 200 {"type":1}; a Webhook Events PING (type 0) with 204 and an empty body. A
// Webhook Event, accepted or a duplicate, is acknowledged with 204 as well. Any other
// interaction, accepted or a duplicate, is acknowledged with a deferred Interaction Response,
// which Discord requires within 3 seconds and which keeps the interaction's token valid for
// 15 minutes for the worker to answer with: {"type":6} for a message component, {"type":8,
// "data":{"choices":[]}} for an autocomplete (which cannot be deferred), {"type":5} otherwise.
func Discord() *Protocol {
	return &Protocol{
		Name:             discordName,
		DisplayName:      "Discord",
		SignatureScheme:  "Ed25519 (hex) of timestamp + body, X-Signature-Ed25519",
		SignsTimestamp:   true,
		DefaultTolerance: discordDefaultTolerance,
		IdentitySource: `interactions: body JSON field "id" (the interaction snowflake); Webhook Events, whose ` +
			`payload has no event id: "body-sha256:" + hex SHA-256 of the raw body`,
		DocsURL: "https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers",
		Retries: "Webhook Events not answered with 204 within 3 seconds are retried \"several times using " +
			"exponential backoff for up to 10 minutes\" (https://discord.com/developers/docs/events/webhook-events); " +
			"whether a retry is signed with a fresh timestamp is not documented, so the 15-minute default " +
			"tolerance accepts the last retry even if it is not. Interactions must be answered within 3 " +
			"seconds and no retry is documented. Discord also sends deliberately invalid signatures to " +
			"check that the endpoint rejects them.",
		ParseSecret:   parseDiscordPublicKey,
		Verify:        verifyDiscord,
		Sign:          signDiscord,
		ExampleSecret: exampleDiscordSecret,
		ExampleBody:   discordExampleBody,
	}
}

// parseDiscordPublicKey decodes the application public key: 64 hex digits (32 bytes).
func parseDiscordPublicKey(secret string) ([]byte, error) {
	if len(secret) != 2*ed25519.PublicKeySize {
		return nil, invalidSecret("a Discord application public key is 64 hex digits")
	}
	key, err := hex.DecodeString(secret)
	if err != nil {
		return nil, invalidSecret("a Discord application public key is 64 hex digits")
	}
	return key, nil
}

// discordSigningKey decodes a private key written as 128 hex digits: the 64-byte
// seed||public-key form that Go's ed25519.PrivateKey and tweetnacl's secretKey use. The public
// half must match the seed.
func discordSigningKey(secret string) (ed25519.PrivateKey, error) {
	if len(secret) != 2*ed25519.PrivateKeySize {
		return nil, invalidSecret("the signing key is not 128 hex digits (an Ed25519 seed and public key)")
	}
	raw, err := hex.DecodeString(secret)
	if err != nil {
		return nil, invalidSecret("the signing key is not 128 hex digits (an Ed25519 seed and public key)")
	}
	priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
	if !bytes.Equal(priv, raw) {
		return nil, invalidSecret("the signing key's public half does not match its seed")
	}
	return priv, nil
}

// exampleDiscordSecret returns a fresh key pair: signing is the 128-hex private key, verifying
// the 64-hex public key as the Developer Portal displays it.
func exampleDiscordSecret() (string, string, error) {
	seed, err := randomBytes(ed25519.SeedSize)
	if err != nil {
		return "", "", err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return hex.EncodeToString(priv), hex.EncodeToString(priv.Public().(ed25519.PublicKey)), nil
}

// discordExampleBody is an APPLICATION_COMMAND interaction whose id is the event id.
func discordExampleBody(eventID string) []byte {
	return marshalJSONUnescaped(map[string]any{
		"app_permissions": "442368",
		"application_id":  "1234560123453231555",
		"channel_id":      "1234560123453231556",
		"data":            map[string]any{"id": "1234560123453231557", "name": "ping", "type": 1},
		"guild_id":        "1234560123453231558",
		"id":              eventID,
		"locale":          "en-US",
		"token":           "aW50ZXJhY3Rpb246MTIzNDU2MDEyMzQ1MzIzMTU1OTpleGFtcGxl",
		"type":            2,
		"version":         1,
	})
}

func verifyDiscord(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(discordSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", discordSignatureHeader)
	}
	sig, ok := decodeLowerHex(raw, ed25519.SignatureSize)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 128 lowercase hex digits", discordSignatureHeader)
	}
	tsRaw, _ := req.Headers.Get(discordTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", discordTimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not decimal unix seconds", discordTimestampHeader)
	}
	msg := make([]byte, 0, len(tsRaw)+len(req.Body))
	msg = append(append(msg, tsRaw...), req.Body...)
	keyID, ok := matchEd25519Key(keys, sig, msg)
	if !ok {
		return Result{}, rejectNoEd25519Match(discordSignatureHeader, keys)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, discordDefaultTolerance)); err != nil {
		return Result{}, err
	}
	res, err := discordIdentity(req.Body)
	if err != nil {
		return Result{}, err
	}
	res.KeyID = keyID
	return res, nil
}

// discordEventAck acknowledges a Webhook Event, accepted or a duplicate. Never modified.
var discordEventAck = Reply{Status: 204}

// Interaction types that ask for a particular deferred answer; any other type is answered
// like a command.
const (
	discordMessageComponent = 3
	discordAutocomplete     = 4
)

// The acknowledgements of a stored interaction, accepted or a duplicate. Never modified. An
// interaction over HTTP must be answered within 3 seconds with an Interaction Response
// object, or Discord fails it and invalidates its token, leaving the worker that takes it from
// the inbox nothing to answer with (discord-api-docs interactions/receiving-and-responding).
// A deferred response keeps the token valid for 15 minutes, for the worker to edit the
// original response or send follow-ups: DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE (5, the user sees
// a loading state) for commands and modal submits, DEFERRED_UPDATE_MESSAGE (6) for message
// components. An autocomplete cannot be deferred and is answered with no choices.
var (
	discordDeferredMessage = jsonReply([]byte(`{"type":5}`))
	discordDeferredUpdate  = jsonReply([]byte(`{"type":6}`))
	discordNoChoices       = jsonReply([]byte(`{"type":8,"data":{"choices":[]}}`))
)

// discordInteractionAck is the acknowledgement of a stored interaction of type typ.
func discordInteractionAck(typ int64) *Reply {
	switch typ {
	case discordMessageComponent:
		return discordDeferredUpdate
	case discordAutocomplete:
		return discordNoChoices
	}
	return discordDeferredMessage
}

// discordIdentity answers PINGs and finds the identity of interactions and webhook events.
func discordIdentity(body []byte) (Result, error) {
	top, err := jsonObject(body)
	if err != nil {
		return Result{}, err
	}
	var typ int64
	rawType, ok := top["type"]
	if !ok || json.Unmarshal(rawType, &typ) != nil {
		return Result{}, Reject(ReasonMalformedPayload, `body has no integer "type"`)
	}
	_, isWebhookEvent := top["event"]
	switch {
	case typ == discordWebhookPing:
		return Result{Handshake: &Reply{Status: 204, Headers: Headers{{Name: "Content-Type", Value: "application/json"}}}}, nil
	case typ == discordTypeOne && isWebhookEvent:
		// "Your endpoint must respond with a 204 No Content" (developers/events/webhook-events):
		// the acknowledgement asked for, rather than a 200 that Discord may count as a failure.
		return Result{EventID: bodySHA256ID(body), SuccessReply: &discordEventAck}, nil
	case typ == discordTypeOne:
		return Result{Handshake: jsonReply([]byte(discordPongResponse))}, nil
	}
	id, _, ok := jsonString(top, "id")
	if !ok || id == "" {
		return Result{}, Reject(ReasonMissingEventID, `interaction has no non-empty string "id"`)
	}
	return Result{EventID: id, SuccessReply: discordInteractionAck(typ)}, nil
}

// signDiscord produces the two headers Discord sends. An application has one key pair, so
// only secrets[0] (the 128-hex private key) signs.
func signDiscord(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("discord: sign needs a private key")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("discord: sign needs a timestamp at or after 1970")
	}
	priv, err := discordSigningKey(strings.TrimSpace(secrets[0]))
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	sig := ed25519.Sign(priv, append([]byte(ts), in.Body...))
	return Headers{
		{Name: discordSignatureHeader, Value: hex.EncodeToString(sig)},
		{Name: discordTimestampHeader, Value: ts},
	}, nil
}
