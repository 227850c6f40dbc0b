package sqlite

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzStoredOptions: the options and scopes columns are JSON this package wrote, read back as
// they are in the file, which a crash, a restore or a hand edit may have corrupted.
// Properties:
//   - any text reads as options or an error, never a panic; what reads is a non-empty map or
//     nil ("none" has one form), and writes back as text that reads as the same map;
//   - options and scopes as callers give them (UTF-8, which is all gRPC carries) read back as
//     written.
func FuzzStoredOptions(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":"b"}`, `{"a":"b","a":"c"}`, `[]`, `{"a":1}`, `{"\u0000":"\ud800"}`, ``, `{"a":"b"}x`} {
		f.Add(s, "k", "v")
	}
	f.Add(`{}`, "", "")
	f.Add(`{}`, "<&>", "\u2028")
	f.Fuzz(func(t *testing.T, text, k, v string) {
		opts, err := decodeOptions(text)
		if err == nil {
			if opts != nil && len(opts) == 0 {
				t.Fatalf("decodeOptions(%q) = an empty non-nil map", text)
			}
			again, err := encodeOptions(opts)
			if err != nil {
				t.Fatalf("options %q read from %q do not write back: %v", opts, text, err)
			}
			if back, err := decodeOptions(again); err != nil || !maps.Equal(back, opts) {
				t.Fatalf("options %q read from %q write back as %q, which reads as %q, %v", opts, text, again, back, err)
			}
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return
		}
		want := map[string]string{k: v}
		stored, err := encodeOptions(want)
		if err != nil {
			t.Fatalf("encodeOptions(%q): %v", want, err)
		}
		if got, err := decodeOptions(stored); err != nil || !maps.Equal(got, want) {
			t.Fatalf("options %q stored as %q read back as %q, %v", want, stored, got, err)
		}
		scopes := []string{k, v}
		storedScopes, err := encodeScopes(scopes)
		if err != nil {
			t.Fatalf("encodeScopes(%q): %v", scopes, err)
		}
		var back []string
		if err := json.Unmarshal([]byte(storedScopes), &back); err != nil || !slices.Equal(back, scopes) {
			t.Fatalf("scopes %q stored as %q read back as %q, %v", scopes, storedScopes, back, err)
		}
	})
}
