package protocol

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
)

// Nylas signs the raw body with HMAC-SHA256 keyed with the webhook secret (v3: the
// webhook_secret returned once when the destination is created; v2: the application's client
// secret) and sends the hex digest in X-Nylas-Signature. There is no timestamp. When a
// destination is created or reactivated, Nylas first sends an unsigned GET with a ?challenge=
// query parameter and expects a 200 whose body is exactly the challenge value. Sources:
// https://developer.nylas.com/docs/v3/notifications/webhooks/ and the SDK release notes
// https://developer.nylas.com/docs/new/v2-changelogs/2023-04-04-node-sdk-v6-10-0 (hex HMAC-SHA256
// of the body).
const (
	nylasName            = "nylas"
	nylasSignatureHeader = "X-Nylas-Signature"
	// nylasMaxChallenge bounds the echoed value; Nylas's challenges are short random strings.
	nylasMaxChallenge = 1024
)

var (
	nylasMAC         = bodyMAC{header: nylasSignatureHeader, newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseNylasSecret = sharedSecretParser("Nylas webhook secret")
)

// Nylas returns the protocol for Nylas (email, calendar, contacts) webhooks.
//
// A GET whose URL carries a non-empty challenge query parameter (at most 1024 bytes) is the
// verification handshake: it is answered 200 with the challenge as a text/plain body and is not
// authenticated, since Nylas does not sign it. For notifications Verify rejects, in this order:
// a GET without a challenge or with an oversized one (missing signature); no X-Nylas-Signature
// (missing signature); a value that is not 64 lowercase hex digits (malformed signature); no
// key matching (signature mismatch); a body that is not a JSON object (malformed payload); no
// non-empty string "id" (missing event id).
func Nylas() *Protocol {
	return &Protocol{
		Name:            nylasName,
		DisplayName:     "Nylas",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Nylas-Signature; GET ?challenge= echo handshake",
		IdentitySource:  `body JSON field "id" (the notification id, the same on every delivery attempt)`,
		DocsURL:         "https://developer.nylas.com/docs/v3/notifications/webhooks/",
		Retries: "Nylas retries notifications that are not answered 200 promptly, with backoff, and " +
			"marks a destination failing after repeated failures (the exact schedule is not " +
			"documented in the sources read). Nothing time-dependent is signed, so there is no " +
			"tolerance; the notification id makes retries duplicates. Compressed delivery (a destination's " +
			"compressed_delivery, gzip bodies) is not supported: whichever bytes Nylas signs, such a notification is " +
			"rejected (mismatched signature, or a body that is not JSON), so leave it off for destinations sent here.",
		ParseSecret:   parseNylasSecret,
		Verify:        verifyNylas,
		Sign:          signNylas,
		ExampleSecret: sharedExample(""),
		ExampleBody:   nylasExampleBody,
	}
}

func verifyNylas(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if req.Method == http.MethodGet {
		return nylasChallenge(req)
	}
	keyID, err := nylasMAC.verify(req, keys)
	if err != nil {
		return Result{}, err
	}
	id, err := jsonBodyString(req.Body, "id")
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// nylasChallenge answers the GET verification request with the challenge it carries.
func nylasChallenge(req *Request) (Result, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return Result{}, Reject(ReasonMissingSignature, "a GET whose URL does not parse is not a Nylas challenge")
	}
	challenge := u.Query().Get("challenge")
	if challenge == "" {
		return Result{}, Reject(ReasonMissingSignature, "a GET without a challenge parameter is not a Nylas challenge")
	}
	if len(challenge) > nylasMaxChallenge {
		return Result{}, Reject(ReasonMissingSignature, "the challenge parameter is longer than %d bytes", nylasMaxChallenge)
	}
	// echoReply adds nosniff: the challenge comes from whoever calls the URL, and a browser
	// sniffing the echo as HTML would run it on the webhook's domain.
	return Result{Handshake: echoReply(challenge)}, nil
}

// signNylas produces the X-Nylas-Signature header. A destination has one secret, so only
// secrets[0] signs.
func signNylas(in SignInput, secrets []string) (Headers, error) {
	return nylasMAC.signJSON(nylasName, parseNylasSecret, in, secrets)
}

// nylasExampleBody is a v3 message.created notification.
func nylasExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"specversion":"1.0","type":"message.created","source":"/google/emails/realtime","id":` + string(id) + `,"time":1767647318,"webhook_delivery_attempt":1,"data":{"application_id":"NYLAS_APPLICATION_ID","object":{"grant_id":"NYLAS_GRANT_ID","id":"18c1f7b1a2b3c4d5","object":"message","subject":"Hello"}}}`)
}
