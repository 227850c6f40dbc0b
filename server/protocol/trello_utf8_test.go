package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"testing"
)

// TestTrelloSignsUTF8Bytes: Trello signs the body's UTF-8 bytes (the "binary string" caveat was
// dropped from its docs in 2016, trello-archive/api-docs pull 26). A body with an en dash
// verifies over its raw bytes, and the lossy low-byte form, which would let "–" (U+2013) stand
// for the control byte 0x13, is refused.
func TestTrelloSignsUTF8Bytes(t *testing.T) {
	t.Parallel()
	p := Trello()
	const secret, url = "trello-app-secret", "https://hooks.example.com/trello"
	keys := keysFor(t, p, secret)
	body := []byte(`{"action":{"id":"a1","data":{"card":{"name":"Q3 – plan"}}}}`)
	sign := func(msg []byte) string {
		m := hmac.New(sha1.New, []byte(secret))
		m.Write(msg)
		m.Write([]byte(url))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	req := &Request{Method: "POST", URL: url, Body: body, Headers: Headers{{Name: "X-Trello-Webhook", Value: sign(body)}}}
	if res, err := p.Verify(req, keys, Params{}); err != nil || res.EventID != "a1" {
		t.Fatalf("UTF-8 signature: EventID %q, err %v", res.EventID, err)
	}
	var binary []byte
	for _, r := range string(body) {
		binary = append(binary, byte(r))
	}
	req.Headers = Headers{{Name: "X-Trello-Webhook", Value: sign(binary)}}
	if _, err := p.Verify(req, keys, Params{}); ReasonOf(err) != ReasonSignatureMismatch {
		t.Fatalf("low-byte (binary string) signature: err %v, want signature mismatch", err)
	}
}
