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
	return func() (string, string, error) {
		b, err := randomBytes(24)
		if err != nil {
			return "", "", err
		}
		s := prefix + hex.EncodeToString(b)
		return s, s, nil
	}
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
