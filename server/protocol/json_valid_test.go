package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, ` {"a":1} `, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`,
	`{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `[]]`, `{"a":[1,{"b":null}]}`,
	`"x"`, `"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"`, `"\u00g0"`, `"\u00e"`, `"\x"`, `"\'"`, "\"a\tb\"",
	"\"\x7f\xff\xfe\"", `"unterminated`, `"\`, `"\u`, `"\u12`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-01`, `1.5.5`, `+1`,
	`2e308`, `123456789012345678901234567890`, `0x10`, `1_000`,
	`true`, `false`, `null`, `tru`, `nul`, `True`, `truex`, `true false`, `[true,false,null]`, `nan`,
	"\t\r\n{\"a\"\t:\n1\r}\n", "\v{}", "\f{}", "\u00a0{}", "\ufeff{}", "{}\x00", "{\"a\":1}\n\n",
	`{"a":"b"}{"c":"d"}`, `[]{}`, `{"a":{"b":{"c":[[[["x"]]]]}}}`,
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	cases := append([]string{}, validJSONCases...)
	// encoding/json allows nesting to 10,000 levels and refuses 10,001.
	for _, depth := range []int{maxJSONDepth, maxJSONDepth + 1} {
		cases = append(cases, strings.Repeat("[", depth)+strings.Repeat("]", depth),
			strings.Repeat(`{"a":`, depth)+"1"+strings.Repeat("}", depth))
	}
	for _, c := range cases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.60q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValidJSON holds validJSON to json.Valid on arbitrary input: it guards which
// authenticated bodies count as malformed.
func FuzzValidJSON(f *testing.F) {
	for _, c := range append(validJSONCases, jsonBodyStringCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}
