package protocol

import "testing"

// Credential digests are stored with the endpoint and outlive the binary that wrote them, so
// the construction sha256(label || salt || credential) is fixed: these values were computed
// independently (python3 hashlib/base64, salt = bytes 0..15, label "hookverify credential
// option v1\x00") and must keep matching exactly the credential they were made from, spaces
// included.
func TestCredentialDigestFormatIsStable(t *testing.T) {
	t.Parallel()
	const (
		plain  = "sha256-salted:AAECAwQFBgcICQoLDA0ODw:9ouYFjHjQz0rXCvOXMjR_UPLVp2B4JTYu3Z9CctYjII" // "verify-me"
		spaced = "sha256-salted:AAECAwQFBgcICQoLDA0ODw:5na5AVw51IjyDVcYd9zZXfdi2hUXjhski-41q5MtjFg" // " verify-me "
	)
	for _, tc := range []struct {
		stored, presented string
		want              bool
	}{
		{plain, "verify-me", true},
		{plain, "verify-me ", false},
		{spaced, " verify-me ", true},
		{spaced, "verify-me", false},
	} {
		if got := credentialMatches(tc.stored, tc.presented); got != tc.want {
			t.Errorf("credentialMatches(%q, %q) = %v, want %v", tc.stored, tc.presented, got, tc.want)
		}
	}
}

// A value is a stored digest only with a 16-byte salt and a 32-byte SHA-256 sum: one of
// another shape is a plaintext credential (DigestCredentialOptions digests it, and it is
// compared as given), not a digest that nothing could ever match.
func TestCredentialDigestNeedsExactSaltAndSumSizes(t *testing.T) {
	t.Parallel()
	const (
		salt16 = "AAECAwQFBgcICQoLDA0ODw"
		sum32  = "9ouYFjHjQz0rXCvOXMjR_UPLVp2B4JTYu3Z9CctYjII"
	)
	if !isCredentialDigest("sha256-salted:" + salt16 + ":" + sum32) {
		t.Fatal("well-formed digest not recognised")
	}
	for _, v := range []string{
		"sha256-salted:AAECAwQFBgc:" + sum32,                                        // 8-byte salt
		"sha256-salted:AAECAwQFBgcICQoLDA0ODxA:" + sum32,                            // 17-byte salt
		"sha256-salted:" + salt16 + ":AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",   // 31-byte sum
		"sha256-salted:" + salt16 + ":AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", // 33-byte sum
	} {
		if isCredentialDigest(v) {
			t.Errorf("isCredentialDigest(%q) = true", v)
		}
		if !credentialMatches(v, v) {
			t.Errorf("credentialMatches(%q, itself) = false: not compared as plaintext", v)
		}
	}
}
