package protocol

import (
	"crypto/sha256"
	"encoding/json"
)

// Onfido signs the raw body with HMAC-SHA256 keyed with the webhook's token and sends the hex
// digest in X-SHA2-Signature (the legacy X-Signature carries an HMAC-SHA1 and is not used here).
// There is no timestamp. Sources: https://documentation.onfido.com/api/latest/#webhooks and the
// official SDKs' WebhookEventVerifier (onfido-python webhook_event_verifier.py: hex HMAC-SHA256
// of the raw event keyed with the webhook token).
const (
	onfidoName            = "onfido"
	onfidoSignatureHeader = "X-SHA2-Signature"
)

var (
	onfidoMAC         = bodyMAC{header: onfidoSignatureHeader, prefix: "", newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseOnfidoSecret = sharedSecretParser("Onfido webhook token")
)

// Onfido returns the protocol for Onfido webhooks.
//
// Verify rejects, in this order: no X-SHA2-Signature (missing signature); a value that is not 64
// lowercase hex digits (malformed signature); no key matching (signature mismatch). The
// identity is the body's hash, so it is never missing.
func Onfido() *Protocol {
	return &Protocol{
		Name:            onfidoName,
		DisplayName:     "Onfido",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-SHA2-Signature",
		IdentitySource:  "sha256 of the raw body (\"body-sha256:<hex>\"): Onfido events carry no event id (payload.object.id is the resource's), and a retry resends the same body",
		DocsURL:         "https://documentation.onfido.com/api/latest/#webhooks",
		Retries: "Onfido retries a delivery that is not answered 2xx (the schedule is not documented in " +
			"the sources read) with the same body. No timestamp is signed, so there is no tolerance; " +
			"the body hash makes the retry a duplicate.",
		ParseSecret:   parseOnfidoSecret,
		Verify:        onfidoMAC.verifier(bodyHashIdentity),
		Sign:          signOnfido,
		ExampleSecret: sharedExample(""),
		ExampleBody:   onfidoExampleBody,
	}
}

// signOnfido produces the headers Onfido sends. A webhook has one token, so only secrets[0] signs. The legacy SHA-1 X-Signature header is not sent.
func signOnfido(in SignInput, secrets []string) (Headers, error) {
	return onfidoMAC.signJSON(onfidoName, parseOnfidoSecret, in, secrets)
}

// onfidoExampleBody is a check.completed event.
func onfidoExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"payload":{"resource_type":"check","action":"check.completed","object":{"id":` + string(id) + `,"status":"complete","completed_at_iso8601":"2026-01-05T21:08:38Z","href":"https://api.eu.onfido.com/v3.6/checks/0b0f8b6c-4f3e-4d1a-9b51-3c0e2f0d1a2b"}}}`)
}
