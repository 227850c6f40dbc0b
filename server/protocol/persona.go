package protocol

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Persona signs "{t}.{body}" with HMAC-SHA256 keyed with the webhook secret (wbhsec_...) and
// sends Persona-Signature: t=<unix>,v1=<hex>. While a secret rotates, the header carries two
// such sets separated by a space, one per secret. Source:
// https://docs.withpersona.com/docs/webhooks-best-practices ("Checking signatures").
const (
	personaName             = "persona"
	personaSignatureHeader  = "Persona-Signature"
	personaDefaultTolerance = 300 * time.Second
)

// Persona returns the protocol for Persona (identity verification) webhooks.
//
// Verify rejects, in this order: no Persona-Signature (missing signature); an empty header, an
// element that is not k=v, a set without t or with two, t not decimal seconds (malformed
// signature); no v1 in any set (missing signature); no v1 matching a key with its set's t
// (malformed signature if a v1 was not 64 lowercase hex digits, else signature mismatch); the
// matching set's t more than the tolerance away from Now (timestamp out of tolerance); a body
// that is not a JSON object (malformed payload); no non-empty string data.id (missing event id).
func Persona() *Protocol {
	return &Protocol{
		Name:             personaName,
		DisplayName:      "Persona",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{t}.{body}", Persona-Signature t=,v1= (space-separated sets while rotating)`,
		SignsTimestamp:   true,
		DefaultTolerance: personaDefaultTolerance,
		IdentitySource:   `body JSON field "data"."id" (the event's evt_... id; the payload is JSON:API)`,
		DocsURL:          "https://docs.withpersona.com/docs/webhooks-best-practices",
		Retries: "Persona retries failed deliveries and may deliver an event more than once; the " +
			"documented t is \"the unix time that the request was sent\", so each attempt is signed " +
			"afresh and 300 s only has to cover transit and clock skew. The event id (data.id) is " +
			"the same on every attempt.",
		ParseSecret:   sharedSecretParser("Persona webhook secret"),
		Verify:        verifyPersona,
		Sign:          signPersona,
		ExampleSecret: sharedExample("wbhsec_"),
		ExampleBody:   personaExampleBody,
	}
}

func verifyPersona(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(personaSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", personaSignatureHeader)
	}
	h, err := parseTVSignatures(personaSignatureHeader, raw, "v1", digestHex, sha256.Size, true)
	if err != nil {
		return Result{}, err
	}
	keyID, err := matchTVSignatures(personaSignatureHeader, h, keys, sha256.New, ".", req.Body, func(ts int64) error {
		return checkTimestamp(ts, p.Now, effectiveTolerance(p, personaDefaultTolerance))
	})
	if err != nil {
		return Result{}, err
	}
	id, err := jsonBodyString(req.Body, "data", "id")
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// signPersona produces Persona-Signature with one t=,v1= set per secret, space-separated, as
// Persona does while a secret rotates.
func signPersona(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("persona: sign needs at least one secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("persona: sign needs a timestamp at or after 1970")
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	sets := make([]string, 0, len(secrets))
	for i, s := range secrets {
		key, err := sharedSecretParser("Persona webhook secret")(s)
		if err != nil {
			return nil, fmt.Errorf("persona: secret %d: %w", i, err)
		}
		sets = append(sets, "t="+ts+",v1="+digestHex.encode(hmacSum(sha256.New, key, macMessage(in.Body, ts, "."))))
	}
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: personaSignatureHeader, Value: strings.Join(sets, " ")},
	}, nil
}

// personaExampleBody is an inquiry.completed event in Persona's JSON:API envelope.
func personaExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"data":{"type":"event","id":` + string(id) + `,"attributes":{"name":"inquiry.completed","payload":{"data":{"type":"inquiry","id":"inq_2CVZ4HyVg7qaboXz5DpBkBUN","attributes":{"status":"completed"}}},"created-at":"2026-01-05T21:08:38.000Z"}}}`)
}
