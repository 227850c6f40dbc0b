package protocol

import (
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/http"
)

// Trello signs the concatenation of the raw body and the webhook's callbackURL, exactly as it
// was given when the webhook was created, with HMAC-SHA1 keyed with the application's OAuth
// secret, and sends the base64 digest in X-Trello-Webhook. There is no timestamp. Creating a
// webhook first sends an unsigned HEAD request to the callbackURL, which must be answered 200.
// Source: https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/ (formerly
// developers.trello.com/page/webhooks: "Webhook Signatures" and "Creating a Webhook").
// The body is signed as its UTF-8 bytes. Docs before September 2016 said Trello signed a Node
// "binary" string (each UTF-16 unit cut to its low byte); Trello removed that caveat because
// it had "accidentally fixed this ... so we're keeping it" (github.com/trello-archive/api-docs
// pull 26). That lossy form is not accepted: any character could be swapped for another with
// the same low byte without breaking the signature.
const (
	trelloName            = "trello"
	trelloSignatureHeader = "X-Trello-Webhook"
)

// Trello returns the protocol for Trello webhooks.
//
// The signature covers the URL: it must be the callbackURL byte for byte, so behind a proxy set
// the endpoint's public_url option to it. A HEAD request is the creation check and is answered
// 200 with an empty body, unauthenticated (Trello does not sign it). For other requests Verify
// rejects, in this order: no X-Trello-Webhook (missing signature); a value that is not 20 bytes
// of canonical padded base64 (malformed signature); no key matching over body + URL (signature
// mismatch); a body that is not a JSON object (malformed payload); no non-empty string
// action.id (missing event id).
func Trello() *Protocol {
	return &Protocol{
		Name:            trelloName,
		DisplayName:     "Trello",
		SignatureScheme: "HMAC-SHA1 (base64) of body + callbackURL, X-Trello-Webhook; HEAD creation check",
		IdentitySource:  `body JSON field "action"."id" (the action that triggered the webhook)`,
		NeedsURL:        true,
		DocsURL:         "https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/",
		Retries: "Trello retries a delivery that is not answered 2xx a few times with growing delays " +
			"and disables a webhook that keeps failing (the exact schedule is not confirmed in the " +
			"sources read). A retry resends the same action, and nothing time-dependent is signed, " +
			"so there is no tolerance; the action id makes retries duplicates.",
		ParseSecret:   sharedSecretParser("Trello application secret"),
		Verify:        verifyTrello,
		Sign:          signTrello,
		ExampleSecret: sharedExample(""),
		ExampleBody:   trelloExampleBody,
	}
}

// trelloMessage writes body + callbackURL.
func trelloMessage(body []byte, callbackURL string) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write(body)
		mac.Write([]byte(callbackURL))
	}
}

func verifyTrello(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if req.Method == http.MethodHead {
		return Result{Handshake: &Reply{Status: http.StatusOK}}, nil
	}
	raw, ok := req.Headers.Get(trelloSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", trelloSignatureHeader)
	}
	sig, ok := decodeStdBase64(raw, sha1.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not %s", trelloSignatureHeader, digestBase64.describe(sha1.Size))
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha1.New, trelloMessage(req.Body, req.URL))
	if !ok {
		return Result{}, rejectNoMatch(trelloSignatureHeader, 0, keys)
	}
	id, err := jsonBodyString(req.Body, "action", "id")
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// signTrello produces the X-Trello-Webhook header for in.Body sent to in.URL. An application
// has one secret, so only secrets[0] signs.
func signTrello(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("trello: sign needs a secret")
	}
	if in.URL == "" {
		return nil, errors.New("trello: sign needs the callback URL")
	}
	key, err := sharedSecretParser("Trello application secret")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("trello: %w", err)
	}
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: trelloSignatureHeader, Value: digestBase64.encode(hmacSum(sha1.New, key, trelloMessage(in.Body, in.URL)))},
	}, nil
}

// trelloExampleBody is an updateCard action notification.
func trelloExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"model":{"id":"4d5ea62fd76aa1136000000c","name":"Trello Development"},"action":{"id":` + string(id) + `,"idMemberCreator":"4ee7deffe582acdec80000ac","data":{"card":{"id":"5a66a1f2a6a3e4a4c3e1a2b3","name":"Ship it","idShort":12},"listAfter":{"name":"Done"},"listBefore":{"name":"Doing"}},"type":"updateCard","date":"2026-01-05T21:08:38.000Z"}}`)
}
