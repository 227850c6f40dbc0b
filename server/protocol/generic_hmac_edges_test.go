package protocol

import (
	"errors"
	"testing"
	"time"
)

// OptionTolerance reports, for a row stored with a tolerance option above the 7-day cap before
// the cap was enforced, the capped tolerance Verify applies, not the stored one.
func TestGenericHMACOptionToleranceReportsTheCap(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	tol, signs := p.OptionTolerance(map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Timestamp", "tolerance": "8760h"})
	if !signs || tol != 7*24*time.Hour {
		t.Errorf("OptionTolerance = %s, %v; want 168h, true", tol, signs)
	}
}

// A secret that decodes to no key bytes under the endpoint's key option ("whsec_" alone under
// key=whsec, nothing after the prefix) is refused when it is added: an empty HMAC key never
// authenticates anything, so the endpoint would reject every delivery.
func TestGenericHMACRefusesSecretDecodingToEmptyKey(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	if _, err := p.CheckSecret("whsec_", map[string]string{"key": "whsec"}); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("CheckSecret(whsec_, key=whsec) = %v, want ErrInvalidSecret", err)
	}
	if _, err := p.CheckSecret("whsec_c2VjcmV0", map[string]string{"key": "whsec"}); err != nil {
		t.Errorf("CheckSecret of a real whsec_ secret: %v", err)
	}
}

// With list=space, empty entries (runs of spaces, a trailing space) are not signatures: a
// wrong but well-formed signature is a mismatch, not a malformed header.
func TestGenericHMACSpaceListSkipsEmptyEntries(t *testing.T) {
	t.Parallel()
	secret := "generic-secret-value"
	keys := []Key{{ID: "k1", Material: []byte(secret)}}
	opts := map[string]string{"list": "space"}
	body := `{"a":1}`
	wrong := hmacSHA256Hex("another-secret", body)
	for _, v := range []string{wrong + " ", "  " + wrong, wrong + "  " + wrong} {
		req := &Request{Method: "POST", Body: []byte(body), Headers: Headers{{Name: "X-Signature", Value: v}}}
		res, err := GenericHMAC().Verify(req, keys, Params{Now: fixedNow, Options: opts})
		checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	}
}
