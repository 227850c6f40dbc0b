package protocol

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
)

// Helpers shared by the Slack, Zoom, Twitch, Discord, Telnyx, SendGrid and Okta protocols.

// b1LooksLikeJSONObject reports whether body's first non-space byte opens a JSON object.
func b1LooksLikeJSONObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// b1JSONReply is a 200 application/json reply with body.
func b1JSONReply(body []byte) *Reply {
	return &Reply{Status: 200, Headers: Headers{{Name: "Content-Type", Value: "application/json"}}, Body: body}
}

// b1TextReply is a 200 text/plain reply with body.
func b1TextReply(body string) *Reply {
	return &Reply{Status: 200, Headers: Headers{{Name: "Content-Type", Value: "text/plain; charset=utf-8"}}, Body: []byte(body)}
}

// b1MarshalJSON marshals v without HTML escaping, so tokens echo back byte for byte.
func b1MarshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// b1MatchEd25519 returns the id of the first key (a 32-byte Ed25519 public key) under which
// sig is a valid signature of msg. Keys of another length are skipped. Go's ed25519.Verify
// refuses non-canonical signatures, so one message has one accepted signature per key.
func b1MatchEd25519(keys []Key, sig, msg []byte) (string, bool) {
	for _, k := range keys {
		if len(k.Material) != ed25519.PublicKeySize {
			continue
		}
		if ed25519.Verify(ed25519.PublicKey(k.Material), msg, sig) {
			return k.ID, true
		}
	}
	return "", false
}

// b1RejectNoEd25519Match is the rejection when no key verified the signature.
func b1RejectNoEd25519Match(header string, keys []Key) error {
	for _, k := range keys {
		if len(k.Material) == ed25519.PublicKeySize {
			return Reject(ReasonSignatureMismatch, "the %s signature does not verify under any public key", header)
		}
	}
	return Reject(ReasonSignatureMismatch, "no public key is configured, so the %s signature cannot verify", header)
}
