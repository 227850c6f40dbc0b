package server

import (
	"strings"
	"testing"
)

// FuzzBearerToken: the authorization header comes from any caller on the network. The parser
// never panics, and what it accepts is exactly one "Bearer <token>" with a printable ASCII
// token, returned as sent.
func FuzzBearerToken(f *testing.F) {
	for _, seed := range []string{"Bearer hvt_abc", "bearer x", "Bearer ", "Bearer  two", "Basic dXNlcjpw",
		"Bearer tok\x00en", "Bearer t\xffk", "Bearer " + strings.Repeat("a", 4096), ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, err := bearerToken([]string{header})
		if err != nil {
			if token != "" {
				t.Fatalf("refused %q but returned a token", header)
			}
			return
		}
		if token == "" || header != header[:len(header)-len(token)]+token || !strings.EqualFold(header[:7], "Bearer ") {
			t.Fatalf("accepted %q as token %q", header, token)
		}
		for i := 0; i < len(token); i++ {
			if token[i] < 0x21 || token[i] > 0x7e {
				t.Fatalf("accepted a token with byte %#x", token[i])
			}
		}
		if _, err := bearerToken([]string{header, header}); err == nil {
			t.Fatal("accepted two authorization headers")
		}
	})
}

// FuzzParseScope: scopes come from admin callers. Parsing never panics, what parses prints back
// to the same text, and a parsed scope never covers an endpoint id with characters no endpoint
// id may have.
func FuzzParseScope(f *testing.F) {
	for _, seed := range []string{"admin", "verify:ep-1", "inbox:acme-*", "verify:*", "verify:", "verify:a*b",
		"inbox:acme-*-*", "VERIFY:x", "verify:ep\x00", "admin:x", ":x"} {
		f.Add(seed, "ep-1")
	}
	f.Fuzz(func(t *testing.T, text, endpointID string) {
		s, err := ParseScope(text)
		if err != nil {
			return
		}
		if s.String() != text {
			t.Fatalf("ParseScope(%q) prints back as %q", text, s.String())
		}
		if s.Kind != ScopeAdmin && s.covers(s.Kind, endpointID) && !validID(endpointID) &&
			!strings.HasSuffix(s.Endpoints, "*") {
			t.Fatalf("scope %q covers the impossible endpoint id %q", text, endpointID)
		}
	})
}
