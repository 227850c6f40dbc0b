package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Slack signs every request to an app's Request URLs — Events API JSON, slash commands and
// interactivity payloads (application/x-www-form-urlencoded) alike — with
// X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{X-Slack-Request-Timestamp}:{raw body}">, keyed
// with the app's Signing Secret as UTF-8 bytes. Form bodies are signed as the raw form string,
// never as decoded fields. There is one signing secret per app, so one signature per request.
const (
	slackName             = "slack"
	slackSignatureHeader  = "X-Slack-Signature"
	slackTimestampHeader  = "X-Slack-Request-Timestamp"
	slackVersion          = "v0"
	slackDefaultTolerance = 300 * time.Second
)

// Slack returns the protocol for Slack app Request URLs (Events API, slash commands,
// interactivity).
//
// Verify rejects, in this order: no X-Slack-Signature (missing signature); a signature that is
// empty or not version=value (malformed signature); a version other than v0 (missing
// signature: unknown versions are ignored and no v0 remains); a v0 value that is not 64
// lowercase hex digits (malformed signature); no or empty X-Slack-Request-Timestamp, or one that
// is not decimal unix seconds (missing timestamp); no key matching (signature mismatch); the
// timestamp more than the tolerance away from Now in either direction (timestamp out of
// tolerance); then the body: a body starting with '{' that is not a JSON object, or a body that
// is neither JSON nor a valid form encoding, or an empty body (malformed payload); an
// authenticated url_verification without a string challenge (malformed payload); an
// event_callback, or any body with an "event_id" key, without a non-empty string event_id
// (missing event id).
//
// An authenticated url_verification is answered with its challenge as text/plain, as Slack's
// docs ask ("verify the request's authenticity and then respond in plaintext with the
// challenge"). Slack's ssl_check of a slash command URL comes unsigned ("an ssl_check request
// does not have x-slack-signature and x-slack-request-timestamp headers", slackapi/bolt-js
// #1397): a POST without X-Slack-Signature whose form body has ssl_check=1 is answered 200
// with an empty body, as Bolt answers it, and nothing is stored.
//
// An accepted or duplicate delivery is answered 200 with no body, Bolt's acknowledgement:
// Slack reads that body for interactivity payloads and slash commands (a view_submission
// answered with anything but an empty body or a response_action shows the user an error and
// keeps the modal open), and the Events API ignores it.
func Slack() *Protocol {
	return &Protocol{
		Name:             slackName,
		DisplayName:      "Slack",
		SignatureScheme:  `HMAC-SHA256 (hex) of "v0:{timestamp}:{body}", X-Slack-Signature v0`,
		SignsTimestamp:   true,
		DefaultTolerance: slackDefaultTolerance,
		IdentitySource: `Events API: body JSON field "event_id" (Ev...), unchanged on retries; ` +
			`bodies Slack gives no event id (slash commands and interactivity, which are form-encoded, ` +
			`and JSON callbacks such as app_rate_limited): "body-sha256:" + hex SHA-256 of the raw body ` +
			`(slash commands and interactions carry a unique trigger_id, so distinct invocations differ)`,
		DocsURL: "https://docs.slack.dev/authentication/verifying-requests-from-slack",
		Retries: "Events API deliveries not answered with a 2xx within 3 seconds are retried up to 3 times " +
			"(about immediately, after 1 minute and after 5 minutes) with X-Slack-Retry-Num and " +
			"X-Slack-Retry-Reason headers; each retry is a new request with a fresh " +
			"X-Slack-Request-Timestamp and signature (Slack's own SDKs reject anything more than 5 minutes " +
			"old, which a 5-minute-late retry would be otherwise), and event_id stays the same. The " +
			"300s default tolerance matches the SDKs' window. Slash commands and interactions are not " +
			"retried. (Retry schedule from secondary sources; the retry headers are confirmed by bolt-python.)",
		// Empty: Slack reads the body of the acknowledgement. A view_submission answered with
		// any body but a response_action leaves the modal open with an error, and a slash
		// command's JSON body is taken for a message; Bolt acknowledges all kinds with an
		// empty 200, which the Events API accepts as well.
		SuccessReply:  &Reply{Status: http.StatusOK},
		ParseSecret:   parseSlackSecret,
		Verify:        verifySlack,
		Sign:          signSlack,
		ExampleSecret: exampleSlackSecret,
		ExampleBody:   slackExampleBody,
	}
}

// parseSlackSecret keeps the Signing Secret's bytes: Slack uses the string as the HMAC key.
func parseSlackSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the Slack signing secret is empty")
	}
	if strings.TrimSpace(secret) != secret {
		return nil, invalidSecret("the Slack signing secret has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// exampleSlackSecret is 32 lowercase hex digits, the shape of a Slack Signing Secret.
func exampleSlackSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b)
	return s, s, nil
}

// slackExampleBody is an Events API event_callback carrying the event id.
func slackExampleBody(eventID string) []byte {
	return marshalJSONUnescaped(map[string]any{
		"token":      "Jhj5dZrVaK7ZwHHjRyZWjbDl",
		"team_id":    "T061EG9R6",
		"api_app_id": "A0PNCHHK2",
		"event": map[string]any{
			"type":     "app_mention",
			"user":     "U061F7AUR",
			"text":     "<@U0LAN0Z89> is it everything a river should be?",
			"ts":       "1515449522.000016",
			"channel":  "C0LAN2Q65",
			"event_ts": "1515449522000016",
		},
		"type":       "event_callback",
		"event_id":   eventID,
		"event_time": 1515449522,
	})
}

// parseSlackSignature decodes "v0=<hex>". Its errors are *Rejection.
func parseSlackSignature(v string) ([]byte, error) {
	if v == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is empty", slackSignatureHeader)
	}
	version, digest, ok := cutByte(v, '=')
	if !ok || version == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is not v0=<hex>", slackSignatureHeader)
	}
	if version != slackVersion {
		return nil, Reject(ReasonMissingSignature, "%s has an unsupported version (want v0=)", slackSignatureHeader)
	}
	sig, ok := decodeLowerHex(digest, sha256.Size)
	if !ok {
		return nil, Reject(ReasonMalformedSignature, "%s is not v0= and 64 lowercase hex digits", slackSignatureHeader)
	}
	return sig, nil
}

func verifySlack(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(slackSignatureHeader)
	if !ok {
		if slackSSLCheck(req.Body) {
			return Result{Handshake: &Reply{Status: http.StatusOK}}, nil
		}
		return Result{}, Reject(ReasonMissingSignature, "no %s header", slackSignatureHeader)
	}
	sig, err := parseSlackSignature(raw)
	if err != nil {
		return Result{}, err
	}
	tsRaw, _ := req.Headers.Get(slackTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", slackTimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not decimal unix seconds", slackTimestampHeader)
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, slackMessage(tsRaw, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(slackSignatureHeader, 0, keys)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, slackDefaultTolerance)); err != nil {
		return Result{}, err
	}
	res, err := slackIdentity(req.Body)
	if err != nil {
		return Result{}, err
	}
	res.KeyID = keyID
	return res, nil
}

// slackMessage writes "v0:{timestamp}:{body}" with the timestamp header string verbatim, as
// Slack's SDKs do (slack-go, python-slack-sdk, Bolt).
func slackMessage(ts string, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(slackVersion + ":"))
		mac.Write([]byte(ts))
		mac.Write([]byte{':'})
		mac.Write(body)
	}
}

// slackSSLCheck reports whether an unsigned body is Slack's certificate check: a form whose
// ssl_check is exactly "1". It is answered without being stored, so passing it needs no
// signature; anything else unsigned is rejected.
func slackSSLCheck(body []byte) bool {
	form, err := url.ParseQuery(string(body))
	return err == nil && len(form["ssl_check"]) == 1 && form.Get("ssl_check") == "1"
}

// slackIdentity reads an authenticated body: the url_verification handshake, an Events API
// envelope's event_id, or the body-hash fallback for bodies Slack gives no id.
func slackIdentity(body []byte) (Result, error) {
	if len(body) == 0 {
		return Result{}, Reject(ReasonMalformedPayload, "body is empty")
	}
	if !looksLikeJSONObject(body) {
		// Slash commands and interactivity (payload=<json>) are form-encoded.
		if _, err := url.ParseQuery(string(body)); err != nil {
			return Result{}, Reject(ReasonMalformedPayload, "body is neither a JSON object nor form-encoded")
		}
		return Result{EventID: bodySHA256ID(body)}, nil
	}
	top, err := jsonObject(body)
	if err != nil {
		return Result{}, err
	}
	typ, _, _ := jsonString(top, "type")
	if typ == "url_verification" {
		challenge, _, ok := jsonString(top, "challenge")
		if !ok || challenge == "" {
			return Result{}, Reject(ReasonMalformedPayload, "url_verification has no challenge string")
		}
		return Result{Handshake: echoReply(challenge)}, nil
	}
	id, present, ok := jsonString(top, "event_id")
	switch {
	case present && (!ok || id == ""):
		return Result{}, Reject(ReasonMissingEventID, `body field "event_id" is not a non-empty string`)
	case present:
		return Result{EventID: id}, nil
	case typ == "event_callback":
		return Result{}, Reject(ReasonMissingEventID, `event_callback body has no "event_id" field`)
	}
	return Result{EventID: bodySHA256ID(body)}, nil
}

// signSlack produces the two headers Slack sends. Slack has one signing secret per app, so
// only secrets[0] signs. Retry headers are not added.
func signSlack(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("slack: sign needs a secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("slack: sign needs a timestamp at or after 1970")
	}
	key, err := parseSlackSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	sum := hmacSum(sha256.New, key, slackMessage(ts, in.Body))
	return Headers{
		{Name: slackTimestampHeader, Value: ts},
		{Name: slackSignatureHeader, Value: slackVersion + "=" + hex.EncodeToString(sum)},
	}, nil
}
