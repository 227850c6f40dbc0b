package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/hookverify/hookverify/internal/ascii"
)

// DocuSign Connect with HMAC enabled sends one X-DocuSign-Signature-<n> header per active
// Connect HMAC key (n = 1..100): the base64 HMAC-SHA256 of the raw body, keyed with the
// key's characters as UTF-8 (the docs' ComputeHash: Encoding.UTF8.GetBytes(secret)).
// X-Authorization-Digest names the algorithm (HMACSHA256).
const (
	docusignName            = "docusign"
	docusignSignaturePrefix = "X-DocuSign-Signature-"
	docusignMaxSignatures   = 100
)

// DocuSign returns the protocol for DocuSign Connect webhooks (JSON SIM messages) with HMAC
// security. A secret is a Connect HMAC key as DocuSign displays it; an account may have
// several active keys, and each delivery carries one signature per key, any of which
// authenticates.
//
// The identity is "<event>:<data.envelopeId>:<generatedDateTime>", with ":<data.recipientId>"
// when present, read from the JSON SIM body; a body without those falls back to
// "body-sha256:" and the hex SHA-256 of the raw body. The body's retryCount is deliberately
// left out, as it may differ between attempts.
//
// Verify rejects, in this order: no X-DocuSign-Signature-<n> header (missing signature); such
// headers none of which is 32 bytes of padded standard base64 (malformed signature); no
// signature matching a key (malformed signature if some header was unparseable, else
// signature mismatch). Headers named X-DocuSign-Signature-<anything else> are ignored.
func DocuSign() *Protocol {
	return &Protocol{
		Name:            docusignName,
		DisplayName:     "DocuSign Connect",
		SignatureScheme: "HMAC-SHA256 (base64) of the raw body, one X-DocuSign-Signature-N per active key",
		IdentitySource:  "JSON SIM body: event + data.envelopeId + generatedDateTime (+ data.recipientId); else body-sha256 of the raw body",
		DocsURL:         "https://developers.docusign.com/platform/webhooks/connect/hmac/",
		Retries: "Connect can retry failed messages (its schedule was not confirmed here). No timestamp is signed, so a " +
			"retry is accepted at any delay. The JSON SIM body carries a retryCount field, which the identity leaves out " +
			"so that attempts of one message deduplicate even if their bodies differ there.",
		ParseSecret:   parseDocuSignSecret,
		Verify:        verifyDocuSign,
		Sign:          signDocuSign,
		ExampleSecret: exampleDocuSignSecret,
		ExampleBody:   docusignExampleBody,
	}
}

// parseDocuSignSecret keeps the key's characters as the HMAC key: DocuSign does not decode
// it, though it looks like base64.
func parseDocuSignSecret(secret string) ([]byte, error) {
	switch {
	case secret == "":
		return nil, invalidSecret("the DocuSign Connect HMAC key is empty")
	case strings.TrimSpace(secret) != secret:
		return nil, invalidSecret("the DocuSign Connect HMAC key has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// docusignSignatures collects the X-DocuSign-Signature-<n> headers, n a decimal 1..100 without
// leading zeros. found counts those headers; malformed those that do not decode.
func docusignSignatures(h Headers) (sigs [][]byte, found, malformed int) {
	for _, f := range h {
		if len(f.Name) <= len(docusignSignaturePrefix) || !ascii.EqualFold(f.Name[:len(docusignSignaturePrefix)], docusignSignaturePrefix) {
			continue
		}
		n := f.Name[len(docusignSignaturePrefix):]
		if v, err := strconv.Atoi(n); err != nil || v < 1 || v > docusignMaxSignatures || n[0] == '0' || n[0] == '+' {
			continue
		}
		found++
		if sig, ok := decodeStdBase64(f.Value, sha256.Size); ok {
			sigs = append(sigs, sig)
		} else {
			malformed++
		}
	}
	return sigs, found, malformed
}

func verifyDocuSign(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	sigs, found, malformed := docusignSignatures(req.Headers)
	if found == 0 {
		return Result{}, Reject(ReasonMissingSignature, "no X-DocuSign-Signature-N header (is Include HMAC Signature enabled?)")
	}
	keyID, ok := matchKey(keys, sigs, sha256.New, func(mac hash.Hash) { mac.Write(req.Body) })
	if !ok {
		return Result{}, rejectNoMatch("X-DocuSign-Signature-N", malformed, keys)
	}
	return Result{KeyID: keyID, EventID: docusignEventID(req.Body)}, nil
}

// docusignEventID derives the identity described on DocuSign.
func docusignEventID(body []byte) string {
	var msg struct {
		Event             string `json:"event"`
		GeneratedDateTime string `json:"generatedDateTime"`
		Data              struct {
			EnvelopeID  string          `json:"envelopeId"`
			RecipientID json.RawMessage `json:"recipientId"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Event == "" || msg.Data.EnvelopeID == "" || msg.GeneratedDateTime == "" {
		return bodySHA256ID(body)
	}
	id := msg.Event + ":" + msg.Data.EnvelopeID + ":" + msg.GeneratedDateTime
	var rs string
	var rn json.Number
	switch {
	case json.Unmarshal(msg.Data.RecipientID, &rs) == nil && rs != "":
		id += ":" + rs
	case json.Unmarshal(msg.Data.RecipientID, &rn) == nil:
		id += ":" + rn.String()
	}
	if len(id) > 400 {
		return bodySHA256ID(body)
	}
	return id
}

// signDocuSign sends X-DocuSign-Signature-1..N, one per secret in order, as Connect does with
// several active keys.
func signDocuSign(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("docusign: sign needs at least one Connect HMAC key")
	}
	if len(secrets) > docusignMaxSignatures {
		return nil, fmt.Errorf("docusign: at most %d keys", docusignMaxSignatures)
	}
	h := Headers{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Authorization-Digest", Value: "HMACSHA256"}}
	for i, s := range secrets {
		key, err := parseDocuSignSecret(s)
		if err != nil {
			return nil, fmt.Errorf("docusign: secret %d: %w", i, err)
		}
		sum := hmacSum(sha256.New, key, func(mac hash.Hash) { mac.Write(in.Body) })
		h = append(h, Header{Name: docusignSignaturePrefix + strconv.Itoa(i+1), Value: base64.StdEncoding.EncodeToString(sum)})
	}
	return h, nil
}

// exampleDocuSignSecret is base64 of 32 random bytes, the shape of a Connect HMAC key.
func exampleDocuSignSecret() (string, string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", "", err
	}
	s := base64.StdEncoding.EncodeToString(b)
	return s, s, nil
}

// docusignExampleBody is a JSON SIM envelope-sent message whose envelopeId is the event id.
func docusignExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"event":"envelope-sent","apiVersion":"v2.1","uri":"/restapi/v2.1/accounts/00000000-0000-0000-0000-000000000000/envelopes/","retryCount":0,"configurationId":10499,"generatedDateTime":"2026-01-02T03:04:05.0600000Z","data":{"accountId":"00000000-0000-0000-0000-000000000000","userId":"00000000-0000-0000-0000-000000000001","envelopeId":` + string(id) + `}}`)
}
