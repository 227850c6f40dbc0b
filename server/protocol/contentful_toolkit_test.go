package protocol

import (
	"errors"
	"testing"
	"time"
)

// TestContentfulLikeToolkitInNode: requests as a Node server (v20) receives them, verified by
// @contentful/node-apps-toolkit 3.16.1 verifyRequest(secret, {method: req.method, path:
// req.url, headers: req.headers, body}, 0). Each signature was made with the toolkit's
// signRequest (secret 64 'a's, timestamp 1603379941037, body cfBody) and each request was sent
// over a socket to a Node 20 http server running verifyRequest, whose answer is want (true:
// accepted; false or a throw: rejected). Node keeps an invalid percent-escape and a '#' in
// req.url; it joins a repeated header's values with ", " (Cookie with "; "; Content-Type, User-
// Agent and the other single-valued headers keep the first); the toolkit matches the
// x-contentful-signed-headers entries to header names exactly (no trim, no lowercasing) and
// throws on fewer than two entries or a signature that is not 64 characters.
func TestContentfulLikeToolkitInNode(t *testing.T) {
	t.Parallel()
	const (
		ms  = 1603379941037
		pub = "ContentManagement.Entry.publish"
		unp = "ContentManagement.Entry.unpublish"
		std = "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"
	)
	type hv = [2]string
	tests := []struct {
		name    string
		target  string
		headers []hv // besides x-contentful-timestamp
		want    bool
		wantID  string // "" = not checked; "body" = the body hash alone
	}{
		{"invalid escape in path and query", "/hooks/a%zz/b?x=%zz&y=1", []hv{{"x-contentful-topic", pub}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "bbc3778894dad3db9437a5613895c08959d484279b190e15b1b5e6d713896d04"}}, true, ""},
		{"lone percent signs", "/h/%/x%2", []hv{{"x-contentful-topic", pub}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "80140174771f16b69e7d562ea05d9f3696feeeac08059bd2f1c6858b9966f4aa"}}, true, ""},
		{"'#' in the request target", "/hooks/x#frag?q=1", []hv{{"x-contentful-topic", pub}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "ad9635badf13e2ef3abebff681987a7147eeb5db0191ee57d42bc21e775784e6"}}, true, ""},
		{"signed topic sent twice, signed joined", "/hooks", []hv{{"x-contentful-topic", pub}, {"X-Contentful-Topic", unp}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "d57df0068812bc7e6266a47f324bc78fe3efdd1062d1963508bd5a1293050206"}}, true, pub + ", " + unp + ":" + bodySHA256ID([]byte(cfBody))},
		{"signed topic sent twice, signed over the first only", "/hooks", []hv{{"x-contentful-topic", pub}, {"X-Contentful-Topic", unp}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "49246f1bfbd1cad4efa785cdda4d11fdb0965ce2d081756c866db36bdf96cb76"}}, false, ""},
		{"repeated content-type (first kept) and cookie (joined by '; ')", "/hooks", []hv{{"x-contentful-topic", pub},
			{"content-type", "application/json"}, {"content-type", "text/plain"}, {"cookie", "a=1"}, {"cookie", "b=2"},
			{"x-contentful-signed-headers", "content-type,cookie,x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"},
			{"x-contentful-signature", "50da4358c7f35ced830c73ff45ff0854ffa9db44db11b0d32d5b65c8d2ca50a6"}}, true, ""},
		{"repeated topic, the first empty", "/hooks", []hv{{"x-contentful-topic", ""}, {"x-contentful-topic", pub}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "8a7fc2b3c214c54ba96fc778c1133215864a885658b173a3601f47a61aaa8ef2"}}, true, ""},
		{"signature sent twice", "/hooks", []hv{{"x-contentful-topic", pub}, {"x-contentful-signed-headers", std},
			{"x-contentful-signature", "49246f1bfbd1cad4efa785cdda4d11fdb0965ce2d081756c866db36bdf96cb76"},
			{"x-contentful-signature", "49246f1bfbd1cad4efa785cdda4d11fdb0965ce2d081756c866db36bdf96cb76"}}, false, ""},
		{"listed name with a space is not signed", "/hooks", []hv{{"x-contentful-topic", pub},
			{"x-contentful-signed-headers", "x-contentful-signed-headers,x-contentful-timestamp, x-contentful-topic"},
			{"x-contentful-signature", "ce30afed88a2669921b6090fc69087aeeb0b5222b76aeaaf3238e78ebe34f651"}}, true, "body"},
		{"listed name in capitals is not signed", "/hooks", []hv{{"x-contentful-topic", pub},
			{"x-contentful-signed-headers", "x-contentful-signed-headers,x-contentful-timestamp,X-Contentful-Topic"},
			{"x-contentful-signature", "ce30afed88a2669921b6090fc69087aeeb0b5222b76aeaaf3238e78ebe34f651"}}, true, "body"},
		// These two checked with verifyRequest given the headers as Node would hold them.
		{"timestamp sent twice (parseInt reads the first)", "/hooks", []hv{{"x-contentful-topic", pub}, {"X-Contentful-Timestamp", "1603379941999"},
			{"x-contentful-signed-headers", std}, {"x-contentful-signature", "49246f1bfbd1cad4efa785cdda4d11fdb0965ce2d081756c866db36bdf96cb76"}}, true, ""},
		{"timestamp with a suffix", "/hooks", []hv{{"x-contentful-topic", pub},
			{"x-contentful-signed-headers", std}, {"x-contentful-signature", "49246f1bfbd1cad4efa785cdda4d11fdb0965ce2d081756c866db36bdf96cb76"}}, true, ""},
		{"one listed name", "/hooks", []hv{{"x-contentful-signed-headers", "x-contentful-timestamp"},
			{"x-contentful-signature", "ce30afed88a2669921b6090fc69087aeeb0b5222b76aeaaf3238e78ebe34f651"}}, false, ""},
	}
	p := Contentful()
	keys := keysFor(t, p, cfSecret)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := "1603379941037"
			if tc.name == "timestamp with a suffix" {
				ts += "ms"
			}
			req := &Request{Method: "POST", URL: "https://hooks.example.com" + tc.target, Body: []byte(cfBody),
				Headers: Headers{{"X-Contentful-Timestamp", ts}}}
			for _, h := range tc.headers {
				req.Headers = append(req.Headers, Header{h[0], h[1]})
			}
			res, err := p.Verify(req, keys, Params{Now: time.UnixMilli(ms + 1000)})
			if tc.want != (err == nil) {
				t.Fatalf("Verify: %v; the toolkit in Node accepted: %v", err, tc.want)
			}
			if err != nil {
				var rej *Rejection
				if !errors.As(err, &rej) {
					t.Fatalf("Verify: %v, not a Rejection", err)
				}
				return
			}
			want := tc.wantID
			if want == "body" {
				want = bodySHA256ID([]byte(cfBody))
			}
			if want != "" && res.EventID != want {
				t.Fatalf("identity %q, want %q", res.EventID, want)
			}
		})
	}
}

// TestContentfulPathKeepsRawTarget: the path normalization takes the request target as
// received, as req.url is in Node: an invalid escape or '#' does not make it unknown, and
// stays in the signed path. Wants from Node 20: encodeURI / querystring.escape as in
// getNormalizedEncodedURI.
func TestContentfulPathKeepsRawTarget(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://h.example/a%zz/b?x=%zz&y=1": "/a%25zz/b?x%253D%2525zz%2526y%253D1",
		"https://h.example/x#frag?q=1":       "/x#frag?q%253D1",
		"https://h.example/x?q=1#f":          "/x?q%253D1%2523f",
		"https://h.example:8443/p":           "/p",
		"HTTPS://h.example/p":                "/p",
		"/p?a=b":                             "/p?a%253Db",
	} {
		got, ok := contentfulPath(in)
		if !ok || got != want {
			t.Errorf("contentfulPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"mailto:x@example.com", "https://h.example/a\x00b"} {
		if got, ok := contentfulPath(in); ok {
			t.Errorf("contentfulPath(%q) = %q, want refused", in, got)
		}
	}
}
