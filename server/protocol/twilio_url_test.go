package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The expected values in this file are Node 20.20.2's (ada 2.9.2) and twilio-node 6.3.1's
// outputs: `new URL(u).toString()`, twilio-node's withLegacyQuerystring
// (querystring.stringify(querystring.parse(query))), and signatures made with
// getExpectedTwilioSignature over the form named, each checked to pass (or fail) twilio-node's
// validateRequest for the URL as requested.

func TestTwilioNormalizeURLMatchesNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		// refused names why Node's answer is not reproduced (the URL is then not normalised).
		refused string
	}{
		{in: "https://example.com/sms?name=O'Brien", want: "https://example.com/sms?name=O%27Brien"},
		{in: "https://example.com/sms?name=O%27Brien", want: "https://example.com/sms?name=O%27Brien"},
		{in: "https://example.com/a b?c d", want: "https://example.com/a%20b?c%20d"},
		{in: "https://example.com/\"q\"?\"q\"", want: "https://example.com/%22q%22?%22q%22"},
		{in: "https://example.com/{x}?{x}", want: "https://example.com/%7Bx%7D?{x}"},
		{in: "https://example.com/a|b^c?a|b^c", want: "https://example.com/a|b^c?a|b^c"},
		{in: "https://example.com/`x`?`x`", want: "https://example.com/%60x%60?`x`"},
		{in: "https://example.com/<x>?<x>", want: "https://example.com/%3Cx%3E?%3Cx%3E"},
		{in: "https://example.com/[x]?[x]", want: "https://example.com/[x]?[x]"},
		{in: "https://example.com/café?café=crème", want: "https://example.com/caf%C3%A9?caf%C3%A9=cr%C3%A8me"},
		{in: "https://example.com/😀?e=😀", want: "https://example.com/%F0%9F%98%80?e=%F0%9F%98%80"},
		{in: "https://example.com/%41%zz%4?%41%zz%4", want: "https://example.com/%41%zz%4?%41%zz%4"},
		{in: "https://example.com/%e2%82%ac?x=%E2%82%AC", want: "https://example.com/%e2%82%ac?x=%E2%82%AC"},
		{in: "https://example.com/a/./b/../c", want: "https://example.com/a/c"},
		{in: "https://example.com/a/%2e/b/%2E%2e/c/.%2E/d", want: "https://example.com/a/d"},
		{in: "https://example.com/a/..", want: "https://example.com/"},
		{in: "https://example.com/a/.", want: "https://example.com/a/"},
		{in: "https://example.com/..", want: "https://example.com/"},
		{in: "https://example.com/../../x", want: "https://example.com/x"},
		{in: "https://example.com/a/...", want: "https://example.com/a/..."},
		{in: "https://example.com/a/%2e%2e%2f/x", want: "https://example.com/a/%2e%2e%2f/x"},
		{in: "https://example.com\\a\\b\\..\\c?x\\y", want: "https://example.com/a/c?x\\y"},
		{in: "https://example.com/a\\b", want: "https://example.com/a/b"},
		{in: "https://example.com:443/x", want: "https://example.com/x"},
		{in: "https://example.com:0443/x", want: "https://example.com/x"},
		{in: "https://example.com:80/x", want: "https://example.com:80/x"},
		{in: "http://example.com:80/x", want: "http://example.com/x"},
		{in: "http://example.com:443/x", want: "http://example.com:443/x"},
		{in: "https://example.com:8443/x", want: "https://example.com:8443/x"},
		{in: "https://example.com:/x", want: "https://example.com/x"},
		{in: "https://example.com:65535/", want: "https://example.com:65535/"},
		{in: "https://example.com:65536/"}, // node: TypeError (Invalid URL)
		{in: "https://example.com:12a/"},   // node: TypeError (Invalid URL)
		{in: "https://example.com:1:2/"},   // node: TypeError (Invalid URL)
		{in: "https://[::1]/x", want: "https://[::1]/x"},
		{in: "https://[::1]:443/x", want: "https://[::1]/x"},
		{in: "https://[0:0:0:0:0:0:0:1]:8443/x", want: "https://[::1]:8443/x"},
		{in: "https://[2001:DB8::0:1]/", want: "https://[2001:db8::1]/"},
		{in: "https://[2001:db8:0:0:1:0:0:1]/", want: "https://[2001:db8::1:0:0:1]/"},
		{in: "https://[::ffff:192.168.0.1]/", want: "https://[::ffff:c0a8:1]/"},
		{in: "https://[1:2:3:4:5:6:7:8]/", want: "https://[1:2:3:4:5:6:7:8]/"},
		{in: "https://[1:2:3:4:5:6:7::]/", want: "https://[1:2:3:4:5:6:7:0]/"},
		{in: "https://[::1:2:3:4:5:6:7]/", want: "https://[0:1:2:3:4:5:6:7]/"},
		{in: "https://[1::2::3]/"},           // node: TypeError (Invalid URL)
		{in: "https://[1:2:3:4:5:6:7:8:9]/"}, // node: TypeError (Invalid URL)
		{in: "https://[::1.2.3.04]/"},        // node: TypeError (Invalid URL)
		{in: "https://[::1]x/"},              // node: TypeError (Invalid URL)
		{in: "https://[::1/"},                // node: TypeError (Invalid URL)
		{in: "https://[0:0:1:0:0:0:0:1]/", want: "https://[0:0:1::1]/"},
		{in: "https://[1:0:0:2:0:0:0:3]/", want: "https://[1:0:0:2::3]/"},
		{in: "HTTPS://EXAMPLE.COM/PATH?Q=V", want: "https://example.com/PATH?Q=V"},
		{in: "HtTp://ExAmPlE.cOm", want: "http://example.com/"},
		{in: "https://example.com", want: "https://example.com/"},
		{in: "https://example.com?", want: "https://example.com/?"},
		{in: "https://example.com/?", want: "https://example.com/?"},
		{in: "https://example.com/x??", want: "https://example.com/x??"},
		{in: "https://example.com/x?&&", want: "https://example.com/x?&&"},
		{in: "https://example.com/x?=", want: "https://example.com/x?="},
		{in: "https://example.com/x?a==b&=c&d=", want: "https://example.com/x?a==b&=c&d="},
		{in: "https://example.com/x?a&b&a", want: "https://example.com/x?a&b&a"},
		{in: "https://example.com/x#frag", want: "https://example.com/x#frag"},
		{in: "https://example.com/x?q#f 'rag`<>", want: "https://example.com/x?q#f%20'rag%60%3C%3E"},
		{in: "https://example.com/x#", want: "https://example.com/x#"},
		{in: "https://user:pass@example.com/x", want: "https://user:pass@example.com/x"},
		{in: "https://user@example.com/x", want: "https://user@example.com/x"},
		{in: "https://:pass@example.com/x", want: "https://:pass@example.com/x"},
		{in: "https://user:@example.com/x", want: "https://user@example.com/x"},
		{in: "https://@example.com/x", want: "https://example.com/x"},
		{in: "https://:@example.com/x", want: "https://example.com/x"},
		{in: "https://u@v:w@x@example.com/x", want: "https://u%40v:w%40x@example.com/x"},
		{in: "https://u s:p|w;d=1@example.com/x", want: "https://u%20s:p%7Cw%3Bd%3D1@example.com/x"},
		{in: "https://usér@example.com/x", want: "https://us%C3%A9r@example.com/x"},
		{in: "https://user@/x"}, // node: TypeError (Invalid URL)
		{in: "https:///x", want: "https://x/"},
		{in: "https:example.com/x", want: "https://example.com/x"},
		{in: "https:/example.com/x", want: "https://example.com/x"},
		{in: "https:\\\\example.com\\x", want: "https://example.com/x"},
		{in: "https:////example.com/x", want: "https://example.com/x"},
		{in: "  https://example.com/x  ", want: "https://example.com/x"},
		{in: "\u0001https://example.com/x\u001f", want: "https://example.com/x"},
		{in: "https://exa\tmple.com/x\n?y\r=1", want: "https://example.com/x?y=1"},
		{in: "https://example.com/a\u0000b?c\u0001d", want: "https://example.com/a%00b?c%01d%7F"},
		{in: "https://a%41.com/", want: "https://aa.com/"},
		{in: "https://a%2fb.com/"}, // node: TypeError (Invalid URL)
		{in: "https://a%zz.com/"},  // node: TypeError (Invalid URL)
		{in: "https://a b.com/"},   // node: TypeError (Invalid URL)
		{in: "https://a_b.example/", want: "https://a_b.example/"},
		{in: "https://a*b.example/", want: "https://a*b.example/"},
		{in: "https://a<b.com/"}, // node: TypeError (Invalid URL)
		{in: "https://a^b.com/"}, // node: TypeError (Invalid URL)
		{in: "https://a|b.com/"}, // node: TypeError (Invalid URL)
		{in: "https://a%b.com/"}, // node: TypeError (Invalid URL)
		{in: "https://exa!$&'()*+,;=mple.com/", want: "https://exa!$&'()*+,;=mple.com/"},
		{in: "https://example.com./", want: "https://example.com./"},
		{in: "https://.example.com/", want: "https://.example.com/"},
		{in: "https://a..b/", want: "https://a..b/"},
		{in: "https://xn--nxasmq6b.com/", refused: "Punycode label"}, // node: https://xn--nxasmq6b.com/
		{in: "https://XN--abc.com/"},                                 // node: TypeError (Invalid URL)
		{in: "https://bücher.example/", refused: "non-ASCII host"},   // node: https://xn--bcher-kva.example/
		{in: "https://%C3%A9.com/", refused: "non-ASCII host"},       // node: https://xn--9ca.com/
		{in: "https://1.2.3.4/", want: "https://1.2.3.4/"},
		{in: "https://1.2.3.4:443/", want: "https://1.2.3.4/"},
		{in: "https://1.2.3.4./", refused: "IPv4 not dotted-decimal"}, // node: https://1.2.3.4/
		{in: "https://01.2.3.4/", refused: "IPv4 not dotted-decimal"}, // node: https://1.2.3.4/
		{in: "https://0x7f.1/", refused: "IPv4 not dotted-decimal"},   // node: https://127.0.0.1/
		{in: "https://127.1/", refused: "IPv4 not dotted-decimal"},    // node: https://127.0.0.1/
		{in: "https://256.1.1.1/"},                                    // node: TypeError (Invalid URL)
		{in: "https://1.2.3.4.5/"},                                    // node: TypeError (Invalid URL)
		{in: "https://example.1/"},                                    // node: TypeError (Invalid URL)
		{in: "https://example.0x/"},                                   // node: TypeError (Invalid URL)
		{in: "https://example.0xg/", want: "https://example.0xg/"},
		{in: "https://1e3/", want: "https://1e3/"},
		{in: "https://09/"},       // node: TypeError (Invalid URL)
		{in: "https://foo.09/"},   // node: TypeError (Invalid URL)
		{in: "https://foo.0x1f/"}, // node: TypeError (Invalid URL)
		{in: "https://example.com/sms?Body=hello+world&From=%2B1415", want: "https://example.com/sms?Body=hello+world&From=%2B1415"},
		{in: "https://example.com/x?a=%2f%2F%7e", want: "https://example.com/x?a=%2f%2F%7e"},
		{in: "https://example.com/x?bodySHA256=abc&x='", want: "https://example.com/x?bodySHA256=abc&x=%27"},
		{in: "https://example.com/%", want: "https://example.com/%"},
		{in: "https://example.com/x?%", want: "https://example.com/x?%"},
		{in: "https://example.com/;a=b,c/d@e:f", want: "https://example.com/;a=b,c/d@e:f"},
		{in: "https://example.com/~!$&()*+,;=:@", want: "https://example.com/~!$&()*+,;=:@"},
		{in: "https://example.com/x?~!$&()*+,;=:@/?", want: "https://example.com/x?~!$&()*+,;=:@/?"},
		{in: "ftp://example.com/x", refused: "not http(s)"}, // node: ftp://example.com/x
		{in: "ws://example.com/x", refused: "not http(s)"},  // node: ws://example.com/x
		{in: "mailto:x@y", refused: "not http(s)"},          // node: mailto:x@y
		{in: "https"}, // node: TypeError (Invalid URL)
		{in: ""},      // node: TypeError (Invalid URL)
	} {
		got, ok := twilioNormalizeURL(tc.in)
		switch {
		case tc.want == "" && ok:
			t.Errorf("twilioNormalizeURL(%q) = %q, want no normalisation", tc.in, got)
		case tc.want != "" && (!ok || got != tc.want):
			t.Errorf("twilioNormalizeURL(%q) = %q, %v; want Node's %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestTwilioLegacyQueryMatchesNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://example.com/x?name=O%27Brien", "https://example.com/x?name=O'Brien"},
		{"https://example.com/x?name=O'Brien", "https://example.com/x?name=O'Brien"},
		{"https://example.com/x?a=1&b=2", "https://example.com/x?a=1&b=2"},
		{"https://example.com/x?b=1&a=2&b=3", "https://example.com/x?b=1&b=3&a=2"},
		{"https://example.com/x?a&b&a", "https://example.com/x?a=&a=&b="},
		{"https://example.com/x?a=&=b&=", "https://example.com/x?a=&=b&="},
		{"https://example.com/x?=", "https://example.com/x?="},
		{"https://example.com/x?&", "https://example.com/x?"},
		{"https://example.com/x?&&", "https://example.com/x?"},
		{"https://example.com/x?a&&b", "https://example.com/x?a=&b="},
		{"https://example.com/x?&a&", "https://example.com/x?a="},
		{"https://example.com/x???", "https://example.com/x?%3F%3F="},
		{"https://example.com/x??a=1", "https://example.com/x?%3Fa=1"},
		{"https://example.com/x?a==b", "https://example.com/x?a=%3Db"},
		{"https://example.com/x?a=b=c", "https://example.com/x?a=b%3Dc"},
		{"https://example.com/x?a+b=c+d", "https://example.com/x?a%20b=c%20d"},
		{"https://example.com/x?a%20b=c%2Bd", "https://example.com/x?a%20b=c%2Bd"},
		{"https://example.com/x?%2B=%2b", "https://example.com/x?%2B=%2B"},
		{"https://example.com/x?x=%7e%7E~", "https://example.com/x?x=~~~"},
		{"https://example.com/x?x=%2F%3A%40!*()'", "https://example.com/x?x=%2F%3A%40!*()'"},
		{"https://example.com/x?x=%", "https://example.com/x?x=%25"},
		{"https://example.com/x?x=%4", "https://example.com/x?x=%254"},
		{"https://example.com/x?x=%zz", "https://example.com/x?x=%25zz"},
		{"https://example.com/x?x=%%41", "https://example.com/x?x=%25A"},
		{"https://example.com/x?x=%4%41", "https://example.com/x?x=%254A"},
		{"https://example.com/x?%41%zz=1", "https://example.com/x?A%25zz=1"},
		{"https://example.com/x?x=%C3%A9", "https://example.com/x?x=%C3%A9"},
		{"https://example.com/x?x=%c3%a9", "https://example.com/x?x=%C3%A9"},
		{"https://example.com/x?x=%C3", "https://example.com/x?x=%EF%BF%BD"},
		{"https://example.com/x?x=%C3%28", "https://example.com/x?x=%EF%BF%BD("},
		{"https://example.com/x?x=%E2%82", "https://example.com/x?x=%EF%BF%BD"},
		{"https://example.com/x?x=%E2%82A", "https://example.com/x?x=%EF%BF%BDA"},
		{"https://example.com/x?x=%E2%82%AC", "https://example.com/x?x=%E2%82%AC"},
		{"https://example.com/x?x=%ED%A0%80", "https://example.com/x?x=%EF%BF%BD%EF%BF%BD%EF%BF%BD"},
		{"https://example.com/x?x=%C0%80", "https://example.com/x?x=%EF%BF%BD%EF%BF%BD"},
		{"https://example.com/x?x=%F4%90%80%80", "https://example.com/x?x=%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD"},
		{"https://example.com/x?x=%F0%9F%98%80", "https://example.com/x?x=%F0%9F%98%80"},
		{"https://example.com/x?x=%FF%FE", "https://example.com/x?x=%EF%BF%BD%EF%BF%BD"},
		{"https://example.com/x?x=%F0%9F%98", "https://example.com/x?x=%EF%BF%BD"},
		{"https://example.com/x?2=a&1=b&b=c&0=d&01=e&-1=f&4294967294=g&4294967295=h&1=i", "https://example.com/x?0=d&1=b&1=i&2=a&4294967294=g&b=c&01=e&-1=f&4294967295=h"},
		{"https://example.com/x?__proto__=1&constructor=2&toString=3&hasOwnProperty=4", "https://example.com/x?__proto__=1&constructor=2&toString=3&hasOwnProperty=4"},
		{"https://example.com/x?x=a#frag", "https://example.com/x?x=a%23frag"},
		{"https://example.com/x?x=1#f'r", "https://example.com/x?x=1%23f'r"},
		{"https://example.com/x?a[]=1&a[]=2", "https://example.com/x?a%5B%5D=1&a%5B%5D=2"},
		{"https://example.com/x?x=%00%01", "https://example.com/x?x=%00%01"},
		{"https://example.com/x?x=%5C", "https://example.com/x?x=%5C"},
		{"https://example.com/x?+=+", "https://example.com/x?%20=%20"},
		{"https://example.com/x?+", "https://example.com/x?%20="},
		{"https://example.com/x?a=+&+", "https://example.com/x?a=%20&%20="},
		{"https://example.com/x?%=%", "https://example.com/x?%25=%25"},
		{"https://example.com/x?x=%25", "https://example.com/x?x=%25"},
		{"https://example.com/x?x=%2", "https://example.com/x?x=%252"},
		{"https://example.com/x?a=1&a=1&a=2", "https://example.com/x?a=1&a=1&a=2"},
		{"https://example.com/x?bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620&foo=1", "https://example.com/x?bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620&foo=1"},
		{"https://example.com/x?x=%22%3C%3E%60%7B%7D%7C%5E%5B%5D", "https://example.com/x?x=%22%3C%3E%60%7B%7D%7C%5E%5B%5D"},
		{"https://example.com/x?Body=%F0%9F%98%80+hi&From=%2B14155550100", "https://example.com/x?Body=%F0%9F%98%80%20hi&From=%2B14155550100"},
		{"https://example.com/x", "https://example.com/x"},
		{"https://example.com/x?", "https://example.com/x?"},
	} {
		if got := twilioLegacyQuery(tc.in); got != tc.want {
			t.Errorf("twilioLegacyQuery(%q) = %q, want Node's %q", tc.in, got, tc.want)
		}
	}

	// maxKeys (1000): empty pairs count, and parsing stops after the 1000th &.
	const u = "https://example.com/x?"
	for _, tc := range []struct{ in, want string }{
		{u + "a=" + strings.Repeat("&", 998) + "b=1", u + "a=&b=1"},
		{u + "a=" + strings.Repeat("&", 999) + "b=1", u + "a=&b=1"},
		{u + "a=" + strings.Repeat("&", 1000) + "b=1", u + "a="},
	} {
		if got := twilioLegacyQuery(tc.in); got != tc.want {
			t.Errorf("twilioLegacyQuery(a=, %d &, b=1) = %q, want Node's %q", strings.Count(tc.in, "&"), got, tc.want)
		}
	}
	var in, want []string
	for i := range 1001 {
		in = append(in, "k"+strconv.Itoa(i)+"="+strconv.Itoa(i))
	}
	want = in[:1000]
	if got := twilioLegacyQuery(u + strings.Join(in, "&")); got != u+strings.Join(want, "&") {
		t.Errorf("1001 pairs: got %d pairs, want Node's first 1000", strings.Count(got, "&")+1)
	}
	in, want = nil, nil
	for i := range 1000 {
		in = append(in, "k"+strconv.Itoa(i))
		want = append(want, "k"+strconv.Itoa(i)+"=")
	}
	if got := twilioLegacyQuery(u + strings.Join(in, "&") + "&"); got != u+strings.Join(want, "&") {
		t.Errorf("1000 names then &: got %d pairs, want Node's 1000", strings.Count(got, "&")+1)
	}
}

// twilioNodeVectors are deliveries signed by twilio-node's getExpectedTwilioSignature (token
// twilioToken) over signed, requested at url; valid is twilio-node validateRequest's answer.
var twilioNodeVectors = []struct {
	name, url, signed, body, sig string
	valid                        bool
}{
	{"quote in query, signed as %27", "https://example.com/sms?name=O'Brien", "https://example.com/sms?name=O%27Brien", twilioForm, "xNuc0SX4cpNCQh37Fb6x8VStfT4=", true},
	{"quote in query, signed as %27 with :443", "https://example.com/sms?name=O'Brien", "https://example.com:443/sms?name=O%27Brien", twilioForm, "w8A5e7/tEEA4/TLfjx3O/R8KJHo=", true},
	{"quote at a port, signed as %27 without it", "https://example.com:8443/sms?name=O'Brien", "https://example.com/sms?name=O%27Brien", twilioForm, "xNuc0SX4cpNCQh37Fb6x8VStfT4=", true},
	{"legacy querystring: + and %7e", "https://example.com/sms?q=a+b&t=%7e", "https://example.com/sms?q=a%20b&t=~", twilioForm, "/bOkxu5TYOUodJFwFHMQAsBQXDQ=", true},
	{"legacy querystring with :443", "https://example.com/sms?q=a+b&t=%7e", "https://example.com:443/sms?q=a%20b&t=~", twilioForm, "cm3rkoWB4J6+eO/3lan0Qrzos/E=", true},
	{"path dot segments and space", "https://Example.COM/a/./b/../c d?x=1", "https://example.com/a/c%20d?x=1", twilioForm, "wlDQs0EwUU6N0mvBEiWv2UGPQEU=", true},
	{"GET, no params, quote in query", "https://example.com/voice?CallSid=CA1&Name=O'Brien", "https://example.com/voice?CallSid=CA1&Name=O%27Brien", "", "rqV+zFE0b7eKib4DcfdKvinsdqs=", true},
	{"JSON bodySHA256 with a quote", "https://example.com/j?n=O'Brien&bodySHA256=" + twilioJSONHash, "https://example.com/j?n=O%27Brien&bodySHA256=" + twilioJSONHash, twilioJSON, "+xiF+eyXuvm+rdkFmtkGyRUF0kI=", true},
	{"signed over a doubly escaped form", "https://example.com/sms?name=O'Brien", "https://example.com/sms?name=O%2527Brien", twilioForm, "mS9IJKP0ObIdxeALg+VnPJ7gVYs=", false},
	{"signed over %27 in the path (WHATWG keeps ' there)", "https://example.com/O'Brien", "https://example.com/O%27Brien", twilioForm, "n1FYV558GU+gHE6IIHKHCqf7hcg=", false},
	{"signed over another URL", "https://example.com/sms?name=O'Brien", "https://example.com/sms?name=O'Brian", twilioForm, "Ep3MDSdEqykYn8i0eWLJvdEdz84=", false},
	{"quote in query, a parameter changed", "https://example.com/sms?name=O'Brien", "https://example.com/sms?name=O%27Brien", strings.Replace(twilioForm, "1234&", "1235&", 1), "xNuc0SX4cpNCQh37Fb6x8VStfT4=", false},
}

func TestTwilioVerifyNormalizedURL(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, "54321", twilioToken)
	for _, v := range twilioNodeVectors {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			method := "POST"
			if v.body == "" {
				method = "GET"
			}
			req := &Request{Method: method, URL: v.url, Headers: Headers{{Name: "X-Twilio-Signature", Value: v.sig}}, Body: []byte(v.body)}
			res, err := p.Verify(req, keys, Params{Now: fixedNow})
			if !v.valid {
				checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
				return
			}
			checkOutcome(t, res, err, 0, "k1", req)
			// The identity is that of the signed URL (without its port) as if received as is.
			signed, _ := twilioURLVariants(v.signed)
			direct := &Request{Method: method, URL: signed[0], Headers: Headers{{Name: "X-Twilio-Signature", Value: twilioSignFor(t, signed[0], v.body, twilioToken)}}, Body: []byte(v.body)}
			if want := eventIDOf(t, p, keys, direct, fixedNow); res.EventID != want {
				t.Errorf("EventID = %q, want the signed URL's %q", res.EventID, want)
			}
		})
	}
}

// TestTwilioIdentityAsReceivedUnchanged pins the identities the code gave before the
// normalised candidates existed (computed with it) for deliveries that verify as received.
func TestTwilioIdentityAsReceivedUnchanged(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, twilioToken)
	for _, tc := range []struct{ url, body, want string }{
		{"https://example.com/sms?name=O%27Brien", twilioForm, "signed-sha256:5d95c6fc76148928122d53d5bbe00293e77971a7e46bbc8ebdcd138e5a11c3e9"},
		{"https://example.com/sms?name=O%27Brien", "", "url-sha256:90433ebb56cc8198316a2cb02d794d39de3fef1e64576c4fb76c69364e6307fb"},
		{"https://example.com:8443/sms?name=O%27Brien", twilioForm, "signed-sha256:5d95c6fc76148928122d53d5bbe00293e77971a7e46bbc8ebdcd138e5a11c3e9"},
		{"https://example.com:8443/sms?name=O%27Brien", "", "url-sha256:90433ebb56cc8198316a2cb02d794d39de3fef1e64576c4fb76c69364e6307fb"},
		// Not normalised: a URL that verifies as received keeps its own bytes in the identity.
		{"https://Example.COM:443/a/./b?x=1", twilioForm, "signed-sha256:7f56f08b8c98d5badf4f31056758c214d4fb8779017503db527c9b1be2b39eb4"},
		{"https://Example.COM:443/a/./b?x=1", "", "url-sha256:45749b357c47a82b8e8f0e1bc60f816b1cbf399afe7db389e342486241271608"},
		{twilioURL, twilioForm, "signed-sha256:a5286dca8260c1287df8cc2c12dc67524c09aaa600b3996d5d2bba902229a481"},
		{twilioURL, "", "url-sha256:d906c15a1aa5246d21ae5cadbca670695286ba4d6b325945cc5117f93c3cc7dd"},
	} {
		req := twilioRequest(tc.url, twilioSignFor(t, tc.url, tc.body, twilioToken), tc.body)
		if got := eventIDOf(t, p, keys, req, fixedNow); got != tc.want {
			t.Errorf("%s (%d-byte body): EventID = %q, want the previous %q", tc.url, len(tc.body), got, tc.want)
		}
	}
}

// TestTwilioNormalizedReplaysKeepIdentity: every URL form that verifies under one signature,
// as received or normalised, gives the identity of the string Twilio signed.
func TestTwilioNormalizedReplaysKeepIdentity(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, twilioToken)
	const canon = "CallSidCA1234567890ABCDECaller+14158675309Digits1234From+14158675309To+18005551212"
	for _, tc := range []struct {
		signed  string
		replays []string
	}{
		{"https://example.com/sms?name=O%27Brien&q=a%20b", []string{
			"https://example.com/sms?name=O'Brien&q=a%20b",
			"https://example.com:8443/sms?name=O'Brien&q=a%20b",
			"HTTPS://EXAMPLE.com:443/./x/../sms?name=O'Brien&q=a%20b",
			"https://example.com\\sms?name=O'Brien&q=a b",
		}},
		// Signed over the legacy querystring form.
		{"https://example.com/sms?q=a%20b&t=~", []string{
			"https://example.com/sms?q=a+b&t=%7e",
			"https://example.com:8443/sms?q=a+b&t=%7E",
			"https://EXAMPLE.com/sms?q=a%20b&t=%7e",
		}},
	} {
		for _, body := range []string{twilioForm, ""} {
			sig := twilioSignFor(t, tc.signed, body, twilioToken)
			want := eventIDOf(t, p, keys, twilioRequest(tc.signed, sig, body), fixedNow)
			signedString := tc.signed
			if body != "" {
				signedString += canon
			}
			if sum := sha256.Sum256([]byte(signedString)); !strings.HasSuffix(want, hex.EncodeToString(sum[:])) {
				t.Fatalf("EventID %q is not the hash of the signed string", want)
			}
			for _, replay := range tc.replays {
				res, err := p.Verify(twilioRequest(replay, sig, body), keys, Params{Now: fixedNow})
				if err != nil {
					t.Errorf("replay %s: %v", replay, err)
					continue
				}
				if res.EventID != want {
					t.Errorf("replay %s (%d-byte body): EventID = %q, want %q", replay, len(body), res.EventID, want)
				}
			}
		}
	}
}

// TestTwilioNormalizedCandidatesBounded: at most four more URLs than the two as received, none
// of them one already tried, so at most six HMACs per key.
func TestTwilioNormalizedCandidatesBounded(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"https://example.com/sms?name=O'Brien",
		"https://example.com:8443/sms?q=a+b",
		"https://example.com/sms",
		"https://example.com/sms?name=O%27Brien",
		"https://example.com:443/",
	} {
		tried, ok := twilioURLVariants(raw)
		if !ok {
			t.Fatalf("%s: no variants", raw)
		}
		cands := twilioNormalizedCandidates(raw, tried)
		if len(tried)+len(cands) > 6 {
			t.Errorf("%s: %d candidates", raw, len(tried)+len(cands))
		}
		seen := map[string]bool{}
		for _, u := range tried {
			seen[u] = true
		}
		for _, c := range cands {
			if seen[c.url] {
				t.Errorf("%s: %s tried twice", raw, c.url)
			}
			seen[c.url] = true
			if w, _ := twilioURLVariants(c.url); w[0] != c.withoutPort {
				t.Errorf("%s: candidate %s without its port is %s, not %s", raw, c.url, w[0], c.withoutPort)
			}
		}
	}
}

func FuzzTwilioNormalizeURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/sms?name=O'Brien", "HTTPS://User:P@ss@EXAMPLE.com:0443/a/./b/../c d?x='é#f",
		"https://[0:0::1]:8443/%2e%2E/x?&&=", "http://1.2.3.4.", "https:\\\\a.com\\b?q\\", "https://a%41.com/?%zz+%41",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, ok := twilioNormalizeURL(raw)
		if !ok {
			return
		}
		for i := 0; i < len(n); i++ {
			if n[i] >= utf8.RuneSelf {
				t.Fatalf("twilioNormalizeURL(%q) = %q: not ASCII", raw, n)
			}
		}
		if again, ok := twilioNormalizeURL(n); !ok || again != n {
			t.Fatalf("twilioNormalizeURL(%q) = %q, but that normalises to %q, %v", raw, n, again, ok)
		}
		if _, ok := twilioURLVariants(n); !ok {
			t.Fatalf("twilioNormalizeURL(%q) = %q: no port variants", raw, n)
		}
		legacy := twilioLegacyQuery(n)
		for i := 0; i < len(legacy); i++ {
			if legacy[i] >= utf8.RuneSelf {
				t.Fatalf("twilioLegacyQuery(%q) = %q: not ASCII", n, legacy)
			}
		}
	})
}

func FuzzTwilioLegacyQuery(f *testing.F) {
	for _, s := range []string{
		"name=O%27Brien", "a+b=c+d&&=&b", "x=%C3%28%ED%A0%80%zz%4%41", "2=a&1=b&b=c&0=d&01=e&4294967295=h", "x=1#f'r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		u := "https://example.com/x?" + query
		got := twilioLegacyQuery(u)
		q := strings.IndexByte(got, '?')
		if q < 0 || got[:q] != "https://example.com/x" {
			t.Fatalf("twilioLegacyQuery(%q) = %q: the part before the query changed", u, got)
		}
		for i := q; i < len(got); i++ {
			if got[i] >= utf8.RuneSelf {
				t.Fatalf("twilioLegacyQuery(%q) = %q: query not ASCII", u, got)
			}
		}
		if again := twilioLegacyQuery(got); again != got {
			t.Fatalf("twilioLegacyQuery(%q) = %q, then %q", u, got, again)
		}
	})
}

// TestTwilioEmptyPortAsReceived: a URL whose authority ends in a colon with no port
// ("https://example.com:/sms") is tried as received, byte for byte, as twilio-node 6.3.1's
// addPort leaves it (its ":" counts as a port) and twilio-python's remove_port does too (its
// port is None). The signatures are twilio-node's getExpectedTwilioSignature over the URL as given and
// the form below, each passing its validateRequest for that URL.
func TestTwilioEmptyPortAsReceived(t *testing.T) {
	t.Parallel()
	const form = "Body=hi&From=%2B14155550100"
	for _, tc := range []struct{ url, sig, sameIdentityAs string }{
		{"https://example.com:/sms?x=1", "s+H4t16NLbkYXDXkemKcaicXO2Q=", "https://example.com/sms?x=1"},
		{"http://[::1]:/sms", "OF48IzxN+N8kp0TjM3q9M9394/Q=", "http://[::1]/sms"},
	} {
		if got := twilioSignFor(t, tc.url, form, twilioToken); got != tc.sig {
			t.Fatalf("Sign(%q) = %q, want twilio-node's %q", tc.url, got, tc.sig)
		}
		res, err := Twilio().Verify(twilioRequest(tc.url, tc.sig, form), []Key{{ID: "k", Material: []byte(twilioToken)}}, Params{})
		if err != nil {
			t.Errorf("Verify(%q) signed over itself: %v", tc.url, err)
			continue
		}
		// The identity is the one the URL had before: that of the URL without its port.
		want, err := Twilio().Verify(twilioRequest(tc.sameIdentityAs, twilioSignFor(t, tc.sameIdentityAs, form, twilioToken), form),
			[]Key{{ID: "k", Material: []byte(twilioToken)}}, Params{})
		if err != nil {
			t.Fatal(err)
		}
		if res.EventID != want.EventID {
			t.Errorf("Verify(%q): EventID %q, want %q (the URL without its port)", tc.url, res.EventID, want.EventID)
		}
	}
}
