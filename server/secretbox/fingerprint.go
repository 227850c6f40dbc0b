package secretbox

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/hex"
)

// FingerprintIterations is the PBKDF2 work factor of Fingerprint. Provider secrets are long
// random strings, but some protocols take a password or shared token that a person chose; the
// work factor makes guessing those from a leaked fingerprint slow.
const FingerprintIterations = 100_000

// Fingerprint identifies a secret's material without revealing it: PBKDF2-HMAC-SHA256 of the
// material, salted with a fixed label and the endpoint id, truncated to 80 bits. Anyone holding
// the material can compute it (hookverify secret fingerprint) to check which secret the server
// holds, for instance against the one a provider's dashboard shows; it does not change when the
// master key does. The same material on two endpoints has two fingerprints.
func Fingerprint(endpointID string, material []byte) string {
	salt := append([]byte("hookverify secret fingerprint v1\x00"), endpointID...)
	key, err := pbkdf2.Key(sha256.New, string(material), salt, FingerprintIterations, 10)
	if err != nil {
		// Only possible for FIPS-mode restrictions on key length, which 10 bytes do not hit.
		panic("secretbox: fingerprint: " + err.Error())
	}
	return "fp_" + hex.EncodeToString(key)
}
