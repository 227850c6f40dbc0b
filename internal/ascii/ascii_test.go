package ascii

import (
	"strings"
	"testing"
)

func TestEqualFold(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"X-Hub-Signature-256", "x-hub-signature-256", true},
		{"HTTPS", "https", true},
		{"", "", true},
		{"Bearer", "bearer", true},
		{"https", "http", false},
		{"@", "`", false}, // 0x40 and 0x60 differ by the case bit but are no letters
		{"[", "{", false},
		// Unicode's simple folding would match these; HTTP does not.
		{"X-Hub-\u017Fignature-256", "X-Hub-Signature-256", false},
		{"X-Slac\u212A-Signature", "X-Slack-Signature", false},
		{"http\u017F", "https", false},
		{"\u00e9", "\u00c9", false},
		{"\u00e9", "\u00e9", true},
	} {
		if got := EqualFold(tc.a, tc.b); got != tc.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := EqualFold(tc.b, tc.a); got != tc.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

// FuzzEqualFold checks EqualFold against strings.EqualFold on ASCII input, where the two must
// agree, and that outside ASCII it matches only what lowercasing ASCII letters makes equal.
func FuzzEqualFold(f *testing.F) {
	f.Add("X-Hub-Signature-256", "x-hub-signature-256")
	f.Add("http\u017F", "https")
	f.Fuzz(func(t *testing.T, a, b string) {
		got := EqualFold(a, b)
		if isASCII(a) && isASCII(b) {
			if want := strings.EqualFold(a, b); got != want {
				t.Fatalf("EqualFold(%q, %q) = %v, strings.EqualFold says %v", a, b, got, want)
			}
			return
		}
		if want := asciiLower(a) == asciiLower(b); got != want {
			t.Fatalf("EqualFold(%q, %q) = %v, want %v", a, b, got, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
