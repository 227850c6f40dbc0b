// Package ascii compares the ASCII-only names of HTTP and URLs: header names, schemes, auth
// schemes, host names such as localhost.
package ascii

// EqualFold reports whether a and b are equal under ASCII case folding: 'A'-'Z' match
// 'a'-'z', and every other byte only itself.
//
// strings.EqualFold folds Unicode as well, so that "ſ" (U+017F) matches "s" and "K" (the
// Kelvin sign, U+212A) matches "k": a header named "X-Hub-Signature-256" with a long s, or a
// URL whose scheme is "httpſ", would be taken for the name it imitates. HTTP names are
// ASCII tokens, compared case-insensitively in ASCII only (RFC 9110, sections 4.2.1 and 5.1),
// as net/http and Node's HTTP parser do.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
