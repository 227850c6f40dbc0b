package protocol

import (
	"errors"
	"testing"
)

// Sign refuses a secret the protocol would refuse to store, rather than signing with whatever
// the parser left behind (an empty key): every secret is parsed, and the first error is returned.
func TestSignRefusesAnInvalidSecret(t *testing.T) {
	t.Parallel()
	in := SignInput{Body: []byte(`{"id":"evt_1"}`), EventID: "evt_1", Timestamp: fixedNow}
	for _, p := range []*Protocol{Calendly(), Shopify(), Bitbucket()} {
		signing, _ := exampleKeys(t, p)
		for _, secrets := range [][]string{{" " + signing}, {signing, signing + " "}} {
			if _, err := p.Sign(in, secrets); !errors.Is(err, ErrInvalidSecret) {
				t.Errorf("%s: Sign with an invalid secret: err = %v, want ErrInvalidSecret", p.Name, err)
			}
		}
	}
}

// A token secret (Twilio Auth Token, Square signature key, Mailgun signing key, ...) may hold
// any printable ASCII character, '~' included; space and DEL are refused.
func TestTokenSecretAcceptsEveryPrintableASCII(t *testing.T) {
	t.Parallel()
	for c := byte('!'); c <= '~'; c++ {
		s := "abc" + string(c) + "def"
		if _, err := parseTokenSecret("token", s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	if _, err := Twilio().ParseSecret("0123456789abcdef~"); err != nil {
		t.Errorf("Twilio: a secret with '~' refused: %v", err)
	}
	for _, s := range []string{"abc def", "abc\x7fdef", "abc\x1fdef"} {
		if _, err := parseTokenSecret("token", s); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("%q: err = %v, want ErrInvalidSecret", s, err)
		}
	}
}
