package protocol

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"
)

// Asana signs the raw body with HMAC-SHA256 keyed with the webhook's secret and sends the hex
// digest in X-Hook-Signature. There is no timestamp. The secret is not shown anywhere in Asana:
// it is created by Asana and sent once, in the X-Hook-Secret header of the confirmation
// handshake POSTed to the target while the create-webhook API call is in flight; the target
// must answer 200 (or 204) echoing X-Hook-Secret. Sources:
// https://developers.asana.com/reference/createwebhook ("Establish a webhook") and
// https://developers.asana.com/docs/webhooks-guide (security: X-Hook-Signature).
const (
	asanaName            = "asana"
	asanaSignatureHeader = "X-Hook-Signature"
	asanaSecretHeader    = "X-Hook-Secret"
	// asanaMaxSecret bounds the echoed handshake secret; Asana's are 64 hex digits.
	asanaMaxSecret = 256
)

var (
	asanaMAC         = bodyMAC{header: asanaSignatureHeader, newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseAsanaSecret = sharedSecretParser("Asana X-Hook-Secret")
)

// Asana returns the protocol for Asana webhooks.
//
// Registering the secret: the handshake is answered by this protocol (200, X-Hook-Secret echoed)
// without a key, because the secret does not exist before it, and the secret is handed to the
// server (Result.HandshakeSecret), which keeps it for an endpoint whose
// HandshakeSecretUntilOption is still ahead and that has no secret in force. Asana shows the
// secret nowhere else: its create-webhook answer does not hold it, and the edges log no header.
//
// A request carrying X-Hook-Secret and no X-Hook-Signature is the handshake; its secret must be
// 1 to 256 visible ASCII characters (malformed signature otherwise, so nothing odd is echoed).
// For events Verify rejects, in this order: no X-Hook-Signature (missing signature); a value that
// is not 64 lowercase hex digits (malformed signature); no key matching (signature mismatch).
// The identity is the body's hash, so it is never missing.
func Asana() *Protocol {
	return &Protocol{
		Name:            asanaName,
		DisplayName:     "Asana",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Hook-Signature; X-Hook-Secret handshake echo",
		IdentitySource:  `sha256 of the raw body ("body-sha256:<hex>"): Asana events carry no id, and a retry resends the same batch`,
		DocsURL:         "https://developers.asana.com/docs/webhooks-guide",
		Retries: "Asana retries a delivery that is not answered 2xx with exponential backoff, for up " +
			"to about a day, and then deletes the webhook (per the webhooks guide; the schedule " +
			"was not re-read here). A retry resends the same body, and no timestamp is signed, so " +
			"there is no tolerance; the body hash makes the retry a duplicate. Heartbeats " +
			"({\"events\":[]}) all hash alike, which is harmless.",
		ParseSecret:     parseAsanaSecret,
		ValidateOptions: validateHandshakeSecretOption,
		Verify:          verifyAsana,
		Sign:            signAsana,
		ExampleSecret:   sharedExample(""),
		ExampleBody:     asanaExampleBody,
	}
}

func verifyAsana(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if secret, ok := req.Headers.Get(asanaSecretHeader); ok {
		if _, signed := req.Headers.Get(asanaSignatureHeader); !signed {
			return asanaHandshake(secret)
		}
	}
	keyID, err := asanaMAC.verify(req, keys)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: bodySHA256ID(req.Body)}, nil
}

// asanaHandshake echoes the X-Hook-Secret, refusing values that could not be a secret.
func asanaHandshake(secret string) (Result, error) {
	if secret == "" || len(secret) > asanaMaxSecret {
		return Result{}, Reject(ReasonMalformedSignature, "%s must be 1 to %d characters", asanaSecretHeader, asanaMaxSecret)
	}
	for i := 0; i < len(secret); i++ {
		if secret[i] <= ' ' || secret[i] > '~' {
			return Result{}, Reject(ReasonMalformedSignature, "%s has a character that is not visible ASCII", asanaSecretHeader)
		}
	}
	return Result{Handshake: &Reply{Status: http.StatusOK, Headers: Headers{{Name: asanaSecretHeader, Value: secret}}}, HandshakeSecret: secret}, nil
}

// HandshakeSecretUntilOption names the endpoint option that asks the server to keep the secret
// a provider hands over in its handshake (Result.HandshakeSecret: Asana's X-Hook-Secret), up
// to the RFC 3339 time it holds and while the endpoint has no secret in force. Anyone who
// knows the URL can send such a handshake, so the window should be the few minutes in which
// the operator creates the webhook.
const HandshakeSecretUntilOption = "handshake_secret_until"

// validateHandshakeSecretOption takes only HandshakeSecretUntilOption, an RFC 3339 time.
func validateHandshakeSecretOption(options map[string]string) error {
	for k, v := range options {
		if k != HandshakeSecretUntilOption {
			return fmt.Errorf("unknown option %q (the only one is %s)", k, HandshakeSecretUntilOption)
		}
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return fmt.Errorf("%s must be an RFC 3339 time, such as 2026-12-06T10:30:00Z", HandshakeSecretUntilOption)
		}
	}
	return nil
}

// signAsana produces the X-Hook-Signature header. A webhook has one secret, so only secrets[0]
// signs.
func signAsana(in SignInput, secrets []string) (Headers, error) {
	return asanaMAC.signJSON(asanaName, parseAsanaSecret, in, secrets)
}

// asanaExampleBody is a task-changed event batch; Asana events carry no id, so eventID goes in
// the changed task's gid, which keeps example bodies distinct.
func asanaExampleBody(eventID string) []byte {
	return []byte(`{"events":[{"user":{"gid":"1201234567890","resource_type":"user"},"created_at":"2026-01-05T21:08:38.000Z","action":"changed","resource":{"gid":"` + jsonEscape(eventID) + `","resource_type":"task","resource_subtype":"default_task"},"parent":null,"change":{"field":"completed","action":"changed"}}]}`)
}
