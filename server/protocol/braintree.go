package protocol

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Braintree posts webhooks as a form with bt_signature and bt_payload: the payload is base64 of
// an XML <notification>, and the signature is "public_key|hex(HMAC-SHA1(SHA1(private_key),
// bt_payload))", several such pairs joined by "&". The official clients also accept the HMAC
// of bt_payload + "\n". Creating a webhook destination sends GET ?bt_challenge=<hex> and expects
// "public_key|hex(HMAC-SHA1(SHA1(private_key), challenge))". Sources: braintree/braintree_ruby
// lib/braintree/webhook_notification_gateway.rb and lib/braintree/digest.rb, and the clients'
// shared test vector (verify("20f9f8ed05f77439fe955c977e4c8a53") with integration keys).
const (
	braintreeName = "braintree"
	// braintreeMaxPairs bounds the signature pairs examined.
	braintreeMaxPairs = 16
)

// Braintree returns the protocol for Braintree webhooks. Its secret is the API key pair as
// "<public key>:<private key>" (both as the Control Panel shows them): the public key selects
// the signature pair, the private key's SHA-1 is the HMAC key.
//
// A GET with bt_challenge (20 to 32 lowercase hex digits, as the clients require) is the
// destination check, answered 200 with public_key|digest under the first key. For
// notifications Verify rejects, in this order: no bt_signature form field (missing signature);
// a bt_payload that is absent, has characters outside base64 and newline, or looks like a
// challenge (malformed payload: a challenge reply must never double as a notification
// signature); no pair for a key's public key, or no pair matching (signature mismatch, or
// malformed signature if no pair had public|40-hex form); a payload that is not base64 of an
// XML <notification> (malformed payload).
func Braintree() *Protocol {
	return &Protocol{
		Name:            braintreeName,
		DisplayName:     "Braintree",
		SignatureScheme: "bt_signature public_key|HMAC-SHA1 (hex, key SHA1(private key)) of bt_payload; GET bt_challenge handshake",
		IdentitySource:  `"body-sha256:" + hex SHA-256 of the decoded notification XML (Braintree sends no notification id; a retry resends the same payload)`,
		DocsURL:         "https://developer.paypal.com/braintree/docs/guides/webhooks/parse",
		Retries: "Braintree retries a webhook that is not answered 2xx hourly for up to 24 hours with " +
			"the same payload (per the webhooks guide; not re-read here). Nothing time-dependent is " +
			"signed, so there is no tolerance; the payload hash makes retries duplicates.",
		ParseSecret:   parseBraintreeSecret,
		Verify:        verifyBraintree,
		Sign:          signBraintree,
		SignBody:      signBodyBraintree,
		ExampleSecret: exampleBraintreeSecret,
		ExampleBody:   braintreeExampleBody,
	}
}

// parseBraintreeSecret splits "<public>:<private>" and keeps "<public>\x00<private>".
func parseBraintreeSecret(secret string) ([]byte, error) {
	pub, priv, ok := strings.Cut(secret, ":")
	if !ok || pub == "" || priv == "" {
		return nil, invalidSecret(`the Braintree secret must be "<public key>:<private key>"`)
	}
	if strings.ContainsAny(secret, " \t\r\n\x00|&") {
		return nil, invalidSecret("the Braintree keys contain whitespace or a separator")
	}
	return []byte(pub + "\x00" + priv), nil
}

// braintreeKey splits key material into the public key and the HMAC key SHA1(private key).
func braintreeKey(material []byte) (string, []byte, bool) {
	pub, priv, ok := bytes.Cut(material, []byte{0})
	if !ok || len(pub) == 0 || len(priv) == 0 {
		return "", nil, false
	}
	sum := sha1.Sum(priv)
	return string(pub), sum[:], true
}

func braintreeDigest(hmacKey []byte, msg string) string {
	m := hmac.New(sha1.New, hmacKey)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// braintreeIsChallenge matches the challenges the clients accept: 20 to 32 lowercase hex digits.
func braintreeIsChallenge(s string) bool {
	if len(s) < 20 || len(s) > 32 {
		return false
	}
	_, ok := decodeLowerHex(s+strings.Repeat("0", len(s)%2), (len(s)+1)/2)
	return ok
}

func verifyBraintree(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if req.Method == http.MethodGet {
		return braintreeChallenge(req, keys)
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil || len(form["bt_signature"]) != 1 {
		return Result{}, Reject(ReasonMissingSignature, "the body has no single bt_signature field")
	}
	if len(form["bt_payload"]) != 1 || form["bt_payload"][0] == "" {
		return Result{}, Reject(ReasonMalformedPayload, "the body has no single bt_payload field")
	}
	payload := form["bt_payload"][0]
	for i := 0; i < len(payload); i++ {
		c := payload[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '\n') {
			return Result{}, Reject(ReasonMalformedPayload, "bt_payload has characters outside base64")
		}
	}
	if braintreeIsChallenge(strings.TrimRight(payload, "\n")) {
		return Result{}, Reject(ReasonMalformedPayload, "bt_payload has the form of a challenge")
	}
	pairs := strings.Split(form["bt_signature"][0], "&")
	if len(pairs) > braintreeMaxPairs {
		pairs = pairs[:braintreeMaxPairs]
	}
	wellFormed := 0
	keyID := ""
	for _, k := range keys {
		pub, hkey, ok := braintreeKey(k.Material)
		if !ok {
			continue
		}
		want := []string{braintreeDigest(hkey, payload), braintreeDigest(hkey, payload+"\n")}
		for _, pair := range pairs {
			p, sig, ok := strings.Cut(pair, "|")
			if !ok || len(sig) != 2*sha1.Size {
				continue
			}
			if _, ok := decodeLowerHex(sig, sha1.Size); !ok {
				continue
			}
			wellFormed++
			if p != pub {
				continue
			}
			if hmac.Equal([]byte(sig), []byte(want[0])) || hmac.Equal([]byte(sig), []byte(want[1])) {
				keyID = k.ID
				break
			}
		}
		if keyID != "" {
			break
		}
	}
	if keyID == "" {
		if wellFormed == 0 && len(keys) > 0 {
			return Result{}, Reject(ReasonMalformedSignature, "bt_signature has no public_key|<40 lowercase hex> pair")
		}
		return Result{}, rejectNoMatch("bt_signature", 0, keys)
	}
	xmlBytes, err := base64.StdEncoding.DecodeString(payload)
	if err != nil || !braintreeIsNotification(xmlBytes) {
		return Result{}, Reject(ReasonMalformedPayload, "bt_payload is not base64 of an XML notification")
	}
	return Result{KeyID: keyID, EventID: bodySHA256ID(xmlBytes)}, nil
}

// braintreeIsNotification reports whether the document's root element is <notification>.
func braintreeIsNotification(doc []byte) bool {
	d := xml.NewDecoder(bytes.NewReader(doc))
	for i := 0; i < 64; i++ {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "notification"
		}
	}
	return false
}

// braintreeChallenge answers GET ?bt_challenge= with public_key|digest under the first key.
// Braintree does not sign the challenge, so anyone can send one: the answer names no key
// (KeyID empty), or every such request would count as a use of the first secret and keep an
// old one looking in use during a rotation.
func braintreeChallenge(req *Request, keys []Key) (Result, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return Result{}, Reject(ReasonMissingSignature, "a GET whose URL does not parse is not a Braintree challenge")
	}
	challenge := u.Query().Get("bt_challenge")
	if !braintreeIsChallenge(challenge) {
		return Result{}, Reject(ReasonMissingSignature, "a GET without a 20-32 hex digit bt_challenge is not a Braintree challenge")
	}
	for _, k := range keys {
		pub, hkey, ok := braintreeKey(k.Material)
		if !ok {
			continue
		}
		return Result{Handshake: &Reply{
			Status:  http.StatusOK,
			Headers: Headers{{Name: "Content-Type", Value: "text/plain; charset=utf-8"}},
			Body:    []byte(pub + "|" + braintreeDigest(hkey, challenge)),
		}}, nil
	}
	return Result{}, Reject(ReasonSignatureMismatch, "no Braintree key is configured to answer the challenge")
}

// signBodyBraintree base64-encodes the XML notification in.Body and builds the form Braintree
// posts, with one signature pair per secret.
func signBodyBraintree(in SignInput, secrets []string) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("braintree: sign needs a key pair")
	}
	payload := base64.StdEncoding.EncodeToString(in.Body)
	pairs := make([]string, 0, len(secrets))
	for i, s := range secrets {
		m, err := parseBraintreeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("braintree: secret %d: %w", i, err)
		}
		pub, hkey, _ := braintreeKey(m)
		pairs = append(pairs, pub+"|"+braintreeDigest(hkey, payload))
	}
	form := url.Values{"bt_signature": {strings.Join(pairs, "&")}, "bt_payload": {payload}}
	return []byte(form.Encode()), nil
}

// signBraintree returns the form's Content-Type; the signature is in the body.
func signBraintree(_ SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("braintree: sign needs a key pair")
	}
	return Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, nil
}

// exampleBraintreeSecret is "<16-character public key>:<32-hex-digit private key>".
func exampleBraintreeSecret() (string, string, error) {
	b, err := randomBytes(24)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b[:8]) + ":" + hex.EncodeToString(b[8:])
	return s, s, nil
}

// braintreeExampleBody is a subscription_went_past_due notification; the event id goes in the
// subscription id.
func braintreeExampleBody(eventID string) []byte {
	var id bytes.Buffer
	_ = xml.EscapeText(&id, []byte(eventID))
	return []byte(`<notification><kind>subscription_went_past_due</kind><timestamp type="datetime">2026-01-05T21:08:38Z</timestamp><subject><subscription><id>` + id.String() + `</id><status>Past Due</status></subscription></subject></notification>`)
}
