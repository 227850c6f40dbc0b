package protocol

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// randomBytes returns n random bytes for example secrets.
func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("protocol: reading randomness: %w", err)
	}
	return b, nil
}

// sharedExample makes an example shared secret: prefix + hex of 24 random bytes, used the same
// way for signing and verifying.
func sharedExample(prefix string) func() (string, string, error) {
	return exampleSecret(prefix, 24, hex.EncodeToString)
}

// exampleSecret makes an example shared secret: prefix + n random bytes written by enc, used
// the same way for signing and verifying.
func exampleSecret(prefix string, n int, enc func([]byte) string) func() (string, string, error) {
	return func() (string, string, error) {
		b, err := randomBytes(n)
		if err != nil {
			return "", "", err
		}
		s := prefix + enc(b)
		return s, s, nil
	}
}

// uuidString writes 16 bytes as a UUID-shaped string (8-4-4-4-12 hex), for exampleSecret.
func uuidString(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) != 32 {
		return h
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// alnumString writes each random byte as one lowercase letter or digit, the look of Dropbox
// app secrets, for exampleSecret (the slight modulo bias is irrelevant for examples).
func alnumString(b []byte) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = chars[int(c)%len(chars)]
	}
	return string(out)
}

var (
	exampleStripeSecret = sharedExample("whsec_")
	exampleGitHubSecret = sharedExample("")
)

// exampleStandardWebhooksSecret is whsec_ + base64 of 24 random bytes, as the spec describes.
func exampleStandardWebhooksSecret() (string, string, error) {
	b, err := randomBytes(24)
	if err != nil {
		return "", "", err
	}
	s := "whsec_" + base64.StdEncoding.EncodeToString(b)
	return s, s, nil
}
