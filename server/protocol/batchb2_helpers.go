package protocol

import ()

// Helpers shared by the Twilio, Square, HubSpot, Mailgun, Adyen, Plaid and GitLab protocols.

// b2TokenSecret checks a secret that is used as its own bytes (an auth token, a signing key
// string): non-empty, printable ASCII, no spaces. what names it in the error, which never
// quotes the secret.
func b2TokenSecret(what, secret string) ([]byte, error) {
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
