package protocol

import "testing"

// TestPlaidSecretTrailingData: a Plaid key is one JWK JSON object. One followed by anything but
// white space is not JSON and must be refused, as "x" after it already was; dec.More() let a
// closing "}" or "]" through, so a mangled paste was stored as if it were the key.
func TestPlaidSecretTrailingData(t *testing.T) {
	t.Parallel()
	p := Plaid()
	_, jwk, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{jwk, " " + jwk + "\n"} {
		if _, err := p.ParseSecret(s); err != nil {
			t.Fatalf("ParseSecret(the JWK with white space) = %v", err)
		}
	}
	for _, suffix := range []string{"}", "]", "x", " }", "{}", `,"kid":"other"}`} {
		if _, err := p.ParseSecret(jwk + suffix); err == nil {
			t.Errorf("ParseSecret(JWK + %q) accepted", suffix)
		}
	}
}
