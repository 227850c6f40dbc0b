// Package ident holds the rule for the identifiers callers name endpoints and dedupe scopes
// by, shared by the server, which enforces it, and the client's HTTP handler, which answers
// an id no endpoint can have without calling the server.
package ident

// MaxLength is the longest identifier, in bytes.
const MaxLength = 128

// Valid reports whether s may be an endpoint id or a dedupe scope: 1 to MaxLength bytes of
// A-Z a-z 0-9 . _ -, safe in URLs, logs and the operation-key derivation (no NUL, no
// separators). A loop rather than a regular expression because every Verify call's endpoint
// id is checked with it.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
