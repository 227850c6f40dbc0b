package protocol

import "testing"

// FuzzCredentialOption: any option value is either kept as a well-formed digest or digested;
// the stored form never matches anything but the value given, and parsing never panics.
func FuzzCredentialOption(f *testing.F) {
	p := Meta()
	f.Add("my-verify-token", "my-verify-token")
	f.Add(digestCredential("t"), "t")
	f.Add("sha256-salted:", "")
	f.Add("sha256-salted:AAAAAAAAAAAAAAAAAAAAAA:AAAA", "x")
	f.Fuzz(func(t *testing.T, value, presented string) {
		stored := p.DigestCredentialOptions(map[string]string{metaVerifyTokenOpt: value})[metaVerifyTokenOpt]
		if isCredentialDigest(value) {
			if stored != value {
				t.Fatalf("the digest %q was replaced by %q", value, stored)
			}
			return
		}
		if !isCredentialDigest(stored) {
			t.Fatalf("%q stored as %q, not a digest", value, stored)
		}
		if credentialMatches(stored, presented) != (presented == value) {
			t.Fatalf("stored %q for %q: presenting %q matches = %v", stored, value, presented, !(presented == value))
		}
	})
}
