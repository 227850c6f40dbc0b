package protocol

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// Mailchimp Transactional (Mandrill) signs each webhook POST in X-Mandrill-Signature: base64
// HMAC-SHA1, keyed with the webhook's key, of the webhook URL exactly as configured followed by
// every POST variable's key and value, sorted by key, with no delimiters. The body is a form
// with one variable, mandrill_events, a JSON array of up to 1000 events.
const (
	mandrillName            = "mandrill"
	mandrillSignatureHeader = "X-Mandrill-Signature"
	// mandrillTestKey is the generic key Mandrill signs its URL-check POST with (an empty
	// mandrill_events) when the HEAD check does not get a 200.
	mandrillTestKey = "test-webhook"
)

// Mandrill returns the protocol for Mailchimp Transactional (Mandrill) webhooks: message, sync
// and inbound events.
//
// Handshakes: when a webhook is added, Mandrill checks the URL with a HEAD request, answered 200
// (it carries no signature and nothing is stored); if that fails it POSTs mandrill_events=[]
// signed with the public key "test-webhook", answered 200 only when that signature is valid and
// the event list is empty. An empty event list signed with a real key is answered the same way.
//
// Verify rejects, in this order: no X-Mandrill-Signature (missing signature); a value that is
// not 20 bytes of padded standard base64 (malformed signature); no URL forwarded (missing
// signature: the URL is signed); a body that is not a form, or repeats a variable (malformed
// payload); no key matching (signature mismatch). The identity is the SHA-256 of the raw body:
// a batch carries no id of its own, and Mandrill retries a failed batch as it was.
func Mandrill() *Protocol {
	return &Protocol{
		Name:            mandrillName,
		DisplayName:     "Mailchimp Transactional (Mandrill)",
		SignatureScheme: "HMAC-SHA1 (base64) of URL + sorted POST key/values, X-Mandrill-Signature",
		IdentitySource:  `"form-sha256:" + hex SHA-256 of the sorted keys and values as signed (a batch of up to 1000 events has no id of its own; the raw body's hash would let a re-encoded replay pass as new)`,
		NeedsURL:        true,
		DocsURL:         "https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/#authenticating-webhook-requests",
		Retries: "Webhooks are batched and POSTed about once a minute; a batch that fails is retried as it was until " +
			"it succeeds or is given up in the Webhooks page (retry schedule not published). No timestamp is signed, so " +
			"a retry is accepted at any delay and deduplicated by the body hash.",
		ParseSecret:   parseMandrillSecret,
		Verify:        verifyMandrill,
		Sign:          signMandrill,
		ExampleSecret: exampleMandrillSecret,
		ExampleBody:   mandrillExampleBody,
	}
}

// parseMandrillSecret keeps the webhook key's bytes, the HMAC key.
func parseMandrillSecret(secret string) ([]byte, error) {
	switch {
	case secret == "":
		return nil, invalidSecret("the Mandrill webhook key is empty")
	case strings.TrimSpace(secret) != secret:
		return nil, invalidSecret("the Mandrill webhook key has leading or trailing whitespace")
	}
	return []byte(secret), nil
}

// mandrillForm parses an application/x-www-form-urlencoded body into sorted key/value pairs.
// A repeated key is refused: Mandrill sends each variable once, and signers disagree on how
// to order repeats. Its errors are *Rejection.
func mandrillForm(body []byte) ([][2]string, error) {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, Reject(ReasonMalformedPayload, "body is not a URL-encoded form")
	}
	pairs := make([][2]string, 0, len(values))
	for k, v := range values {
		if len(v) != 1 {
			return nil, Reject(ReasonMalformedPayload, "body repeats a form variable")
		}
		pairs = append(pairs, [2]string{k, v[0]})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	return pairs, nil
}

// mandrillMessage writes the URL and each key and value, with no delimiter.
func mandrillMessage(u string, pairs [][2]string) func(hash.Hash) {
	return func(mac hash.Hash) {
		mac.Write([]byte(u))
		for _, p := range pairs {
			mac.Write([]byte(p[0]))
			mac.Write([]byte(p[1]))
		}
	}
}

func verifyMandrill(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	if req.Method == http.MethodHead {
		// Mandrill's URL check: unsigned, and answered without storing anything.
		return Result{Handshake: &Reply{Status: http.StatusOK}}, nil
	}
	raw, ok := req.Headers.Get(mandrillSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", mandrillSignatureHeader)
	}
	sig, ok := decodeStdBase64(raw, sha1.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 20 bytes of padded base64", mandrillSignatureHeader)
	}
	if req.URL == "" {
		return Result{}, Reject(ReasonMissingSignature, "the signature covers the webhook URL, and none was forwarded")
	}
	pairs, err := mandrillForm(req.Body)
	if err != nil {
		return Result{}, err
	}
	msg := mandrillMessage(req.URL, pairs)
	empty := len(pairs) == 1 && pairs[0][0] == "mandrill_events" && strings.TrimSpace(pairs[0][1]) == "[]"
	keyID, ok := matchKey(keys, [][]byte{sig}, sha1.New, msg)
	if !ok {
		if empty {
			if _, test := matchKey([]Key{{ID: mandrillTestKey, Material: []byte(mandrillTestKey)}}, [][]byte{sig}, sha1.New, msg); test {
				return Result{Handshake: &Reply{Status: http.StatusOK}}, nil
			}
		}
		return Result{}, rejectNoMatch(mandrillSignatureHeader, 0, keys)
	}
	if empty {
		return Result{KeyID: keyID, Handshake: &Reply{Status: http.StatusOK}}, nil
	}
	return Result{KeyID: keyID, EventID: mandrillEventID(pairs)}, nil
}

// mandrillEventID identifies a delivery by what its signature covers, the sorted keys and
// values run together as signed (the URL aside, the endpoint's own), not by the raw body:
// many bodies decode to the same pairs (a key's letters percent-encoded, a stray '&'), and
// pairs split differently run together the same, so a replay of a captured delivery in any
// of those forms verifies under the original signature and must get the original's id, to
// be answered DUPLICATE rather than stored again. Mandrill sends no event id of its own for
// the batch a delivery carries.
func mandrillEventID(pairs [][2]string) string {
	h := sha256.New()
	mandrillMessage("", pairs)(h)
	return "form-sha256:" + hex.EncodeToString(h.Sum(nil))
}

// signMandrill signs in.Body (a form) for in.URL with the first secret: a Mandrill webhook has
// one key.
func signMandrill(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("mandrill: sign needs the webhook key")
	}
	if in.URL == "" {
		return nil, errors.New("mandrill: sign needs the webhook URL (it is signed)")
	}
	key, err := parseMandrillSecret(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("mandrill: %w", err)
	}
	pairs, err := mandrillForm(in.Body)
	if err != nil {
		return nil, fmt.Errorf("mandrill: %w", err)
	}
	sum := hmacSum(sha1.New, key, mandrillMessage(in.URL, pairs))
	return Headers{
		{Name: "Content-Type", Value: "application/x-www-form-urlencoded"},
		{Name: mandrillSignatureHeader, Value: base64.StdEncoding.EncodeToString(sum)},
	}, nil
}

// exampleMandrillSecret is 16 random bytes in unpadded base64url, the form of Mandrill's
// 22-character webhook keys.
func exampleMandrillSecret() (string, string, error) {
	b, err := randomBytes(16)
	if err != nil {
		return "", "", err
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	return s, s, nil
}

// mandrillExampleBody is a form carrying one "send" event whose message _id is the event id.
func mandrillExampleBody(eventID string) []byte {
	events := `[{"event":"send","_id":` + mandrillJSONString(eventID) + `,"ts":1365109999,"msg":{"ts":1365109999,"subject":"This an example webhook message","email":"example.webhook@mandrillapp.com","sender":"example.sender@mandrillapp.com","tags":["webhook-example"],"state":"sent","_id":` + mandrillJSONString(eventID) + `}}]`
	return []byte(url.Values{"mandrill_events": {events}}.Encode())
}

// mandrillJSONString quotes s as a JSON string.
func mandrillJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
