package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for parsers of untrusted bytes that had none of their own: the low-level
// signature decoders (every provider's header goes through them), the JSON pointer of the
// option-configured protocols (pointer from an admin caller, body from the provider) and every
// protocol's ParseSecret (secrets come from admin callers). Each is held to a reference or a
// round trip, not only to not panicking.

// refPointerLookup is an independent RFC 6901 evaluation over encoding/json's decoding: a body
// json.Valid refuses, or a pointer that is not "" or "/..." with '~' only as ~0/~1, is an error.
func refPointerLookup(body []byte, ptr string) (any, bool, bool) {
	if !json.Valid(body) {
		return nil, false, false
	}
	var tokens []string
	if ptr != "" {
		if ptr[0] != '/' {
			return nil, false, false
		}
		for _, tok := range strings.Split(ptr[1:], "/") {
			if strings.Count(tok, "~") != strings.Count(tok, "~0")+strings.Count(tok, "~1") {
				return nil, false, false
			}
			tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var cur any
	if dec.Decode(&cur) != nil {
		return nil, false, false
	}
	for _, tok := range tokens {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false, true
			}
			cur = v
		case []any:
			if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.Trim(tok, "0123456789") != "" {
				return nil, false, true
			}
			n, err := strconv.Atoi(tok)
			if err != nil || n >= len(node) {
				return nil, false, true
			}
			cur = node[n]
		default:
			return nil, false, true
		}
	}
	return cur, true, true
}

// FuzzGenericPointerLookup holds genericPointerLookup to refPointerLookup: same error/found
// answer and the same value.
func FuzzGenericPointerLookup(f *testing.F) {
	for _, c := range []struct{ body, ptr string }{
		{`{"id":"evt_1"}`, "/id"},
		{`{"data":{"items":[{"id":7}]}}`, "/data/items/0/id"},
		{`{"a/b":{"m~n":"x"}}`, "/a~1b/m~0n"},
		{`{"id":"a"}x`, "/id"},
		{`{"id":"a"}}`, "/id"},
		{`[1,2,3]`, "/01"},
		{`{"":{"":1}}`, "//"},
		{`{"id":"a"} `, "/id"},
		{`{"id":"a"}{"id":"b"}`, "/id"},
	} {
		f.Add([]byte(c.body), c.ptr)
	}
	f.Fuzz(func(t *testing.T, body []byte, ptr string) {
		got, found, err := genericPointerLookup(body, ptr)
		want, wantFound, wantOK := refPointerLookup(body, ptr)
		if (err == nil) != wantOK {
			t.Fatalf("genericPointerLookup(%q, %q) error = %v, reference ok = %v", body, ptr, err, wantOK)
		}
		if err != nil {
			return
		}
		if found != wantFound || !reflect.DeepEqual(got, want) {
			t.Fatalf("genericPointerLookup(%q, %q) = %#v, %v; reference %#v, %v", body, ptr, got, found, want, wantFound)
		}
	})
}

// FuzzDigestDecode holds each digest encoding's decoder to the standard library and to
// uniqueness: what decodes re-encodes to exactly the input, so no two header strings carry the
// same signature.
func FuzzDigestDecode(f *testing.F) {
	for _, s := range []string{
		strings.Repeat("ab", 32), strings.Repeat("AB", 32), strings.Repeat("0", 40),
		"7S2+kN8bZsrdAEADJ+yYfWWsf/4=", "7S2+kN8bZsrdAEADJ+yYfWWsf/5=", "7S2+kN8bZsrdAEADJ+yYfWWsf/4",
		"tLa470fx7qkLLEcMOcEUFuBbRSkGujyskxrNXcoh0N0", "tLa470fx7qkLLEcMOcEUFuBbRSkGujyskxrNXcoh0N1",
		"7S2+kN8bZsrdAEADJ+yY\nfWWsf/4=",
	} {
		f.Add(s, uint8(20))
		f.Add(s, uint8(32))
	}
	f.Fuzz(func(t *testing.T, s string, size uint8) {
		n := int(size%70) + 1
		for _, e := range []digestEncoding{digestHex, digestBase64, digestBase64URL} {
			got, ok := e.decode(s, n)
			var ref []byte
			var err error
			switch e {
			case digestHex:
				if strings.ToLower(s) != s {
					err = strconv.ErrSyntax
				} else {
					ref, err = hex.DecodeString(s)
				}
			case digestBase64:
				ref, err = base64.StdEncoding.Strict().DecodeString(s)
			case digestBase64URL:
				ref, err = base64.RawURLEncoding.Strict().DecodeString(s)
			}
			// The standard decoders skip CR and LF; a header carrying them is not canonical.
			wantOK := err == nil && len(ref) == n && !strings.ContainsAny(s, "\r\n")
			if ok != wantOK || (ok && !bytes.Equal(got, ref)) {
				t.Fatalf("%v.decode(%q, %d) = %x, %v; reference %x, %v", e, s, n, got, ok, ref, wantOK)
			}
			if ok && e.encode(got) != s {
				t.Fatalf("%v.decode(%q, %d) accepted a non-canonical form (canonical %q)", e, s, n, e.encode(got))
			}
		}
	})
}

// FuzzParseUnixSeconds holds parseUnixSeconds to its contract: 1 to 19 ASCII digits that fit
// an int64, and the value strconv gives them.
func FuzzParseUnixSeconds(f *testing.F) {
	for _, s := range []string{"1700000000", "0", "", "-1", "+1", " 1", "1e9", "9223372036854775807", "9223372036854775808", "0000000000000000001", "00000000000000000001", "١٢"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseUnixSeconds(s)
		ref, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil && len(s) >= 1 && len(s) <= 19 && strings.Trim(s, "0123456789") == ""
		if ok != wantOK || (ok && v != ref) {
			t.Fatalf("parseUnixSeconds(%q) = %d, %v; want %d, %v", s, v, ok, ref, wantOK)
		}
	})
}

// FuzzEveryProtocolParseSecret: secrets arrive from admin callers (AddSecret, the CLI) and are
// parsed by each protocol's ParseSecret. Properties, for every protocol:
//   - any string gets key material or an error, never a panic, the same answer twice;
//   - an error never quotes the secret (checked with a marker spliced into it: whatever the
//     parser says of the rest, the marker must not come back);
//   - accepted material is non-empty (an empty HMAC key is public knowledge);
//   - for a protocol whose signing and verifying secrets are the same string, a delivery its
//     Sign makes with an accepted secret authenticates under the parsed key.
func FuzzEveryProtocolParseSecret(f *testing.F) {
	protocols := Builtin()
	symmetric := make([]bool, len(protocols)) // the signing secret is the verifying one
	for i, p := range protocols {
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			f.Fatalf("%s: ExampleSecret: %v", p.Name, err)
		}
		symmetric[i] = signing == verifying
		f.Add(uint8(i), verifying, uint16(len(verifying)/2))
		f.Add(uint8(i), " "+signing+"\n", uint16(0))
	}
	f.Add(uint8(0), "", uint16(0))
	f.Add(uint8(1), "\xff\xfe", uint16(1))
	const marker = "Zq7XmarkerK3w"
	f.Fuzz(func(t *testing.T, which uint8, secret string, pos uint16) {
		n := int(which) % len(protocols)
		p := protocols[n]
		m1, err1 := p.ParseSecret(secret)
		m2, err2 := p.ParseSecret(secret)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(m1, m2) {
			t.Fatalf("%s: ParseSecret is not deterministic: %x, %v then %x, %v", p.Name, m1, err1, m2, err2)
		}
		i := int(pos) % (len(secret) + 1)
		marked := secret[:i] + marker + secret[i:]
		if _, err := p.ParseSecret(marked); err != nil && strings.Contains(err.Error(), marker) {
			t.Fatalf("%s: ParseSecret error quotes the secret: %v", p.Name, err)
		}
		if err1 != nil {
			return
		}
		if len(m1) == 0 {
			t.Fatalf("%s: ParseSecret(%q) accepted with empty key material", p.Name, secret)
		}
		if !symmetric[n] {
			return // asymmetric (or a differing credential form): the signing secret is another string
		}
		body := ExampleBody(p, "evt_fuzz_1")
		in := SignInput{Body: body, EventID: "evt_fuzz_1", Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in"}
		d, err := SignDelivery(p, in, []string{secret})
		if err != nil {
			return // Sign may refuse what ParseSecret takes only when it cannot carry it
		}
		req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
		_, err = p.Verify(req, []Key{{ID: "k0", Material: m1}}, Params{Now: fixedNow})
		if err != nil && signatureStage(ReasonOf(err)) {
			t.Fatalf("%s: a delivery signed with secret %q does not authenticate under its parsed key: %v", p.Name, secret, err)
		}
	})
}
