package crdb

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzStoredOptions: the options (JSONB) and scopes columns hold JSON this package wrote, read
// back as the database returns them, which a restore or a hand edit may have corrupted.
// Properties:
//   - any bytes read as options or an error, never a panic, and what reads writes back as
//     JSON that reads as the same options, nil (SQL NULL) as nil;
//   - options and scopes as callers give them (UTF-8, which is all gRPC carries) read back as
//     written, nil and empty options each as itself.
func FuzzStoredOptions(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":"b"}`, `{"a": "b", "a": "c"}`, `[]`, `{"a":1}`, `{"\u0000":"\ud800"}`, ``, `{"a":"b"}x`} {
		f.Add([]byte(s), "k", "v")
	}
	f.Add([]byte(nil), "", "")
	f.Add([]byte(`{}`), "<&>", "\u2028")
	f.Fuzz(func(t *testing.T, data []byte, k, v string) {
		opts, err := decodeOptions(data)
		if err == nil {
			again, err := encodeOptions(opts)
			if err != nil {
				t.Fatalf("options %q read from %q do not write back: %v", opts, data, err)
			}
			var stored []byte
			if again != nil {
				stored = []byte(again.(string))
			}
			if back, err := decodeOptions(stored); err != nil || !maps.Equal(back, opts) || (back == nil) != (opts == nil) {
				t.Fatalf("options %q read from %q write back as %q, which reads as %q, %v", opts, data, stored, back, err)
			}
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return
		}
		for _, want := range []map[string]string{{k: v}, {}, nil} {
			stored, err := encodeOptions(want)
			if err != nil {
				t.Fatalf("encodeOptions(%q): %v", want, err)
			}
			var raw []byte
			if stored != nil {
				raw = []byte(stored.(string))
			}
			if got, err := decodeOptions(raw); err != nil || !maps.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("options %#v stored as %q read back as %#v, %v", want, raw, got, err)
			}
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
