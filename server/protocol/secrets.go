package protocol

import (
	"fmt"
	"strings"
)

// sharedSecretParser returns a ParseSecret for providers that key the HMAC with the secret's
// own bytes: it refuses an empty secret and one with surrounding whitespace (a copy-paste
// accident the provider never displays). what names the secret in errors, which never quote it.
func sharedSecretParser(what string) func(string) ([]byte, error) {
	return func(secret string) ([]byte, error) {
		if secret == "" {
			return nil, invalidSecret("the " + what + " is empty")
		}
		if strings.TrimSpace(secret) != secret {
			return nil, invalidSecret("the " + what + " has leading or trailing whitespace")
		}
		return []byte(secret), nil
	}
}

// parseSigningKeys parses every secret with parse, for Sign. It needs at least one.
func parseSigningKeys(provider string, secrets []string, parse func(string) ([]byte, error)) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%s: sign needs at least one secret", provider)
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: secret %d: %w", provider, i, err)
		}
		keys[i] = k
	}
	return keys, nil
}

// parseTokenSecret checks a secret that is used as its own bytes (an auth token, a signing key
// string): non-empty, printable ASCII, no spaces. what names it in the error, which never
// quotes the secret.
func parseTokenSecret(what, secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret(what + " is empty")
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return nil, invalidSecret(what + " contains whitespace or a character that is not printable ASCII")
		}
	}
	return []byte(secret), nil
}
