package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The toolkit's test secret and timestamp (contentful/node-apps-toolkit
// src/requests/sign-request.spec.ts: VALID_SECRET is 64 'a's, VALID_TIMESTAMP 1603379941037).
var (
	cfSecret    = strings.Repeat("a", 64)
	cfSecretNew = strings.Repeat("b", 64)
)

const (
	cfURL   = "https://hooks.example.com/api/resources?q=1&w=2"
	cfPath  = "/api/resources?q%253D1%2526w%253D2" // getNormalizedEncodedURI of the path and query
	cfBody  = `{"sys":{"id":"e1"}}`
	cfTopic = "ContentManagement.Entry.publish"
)

// cfSig computes the toolkit's hash independently: method, normalized path, the sorted
// "name:value" signed headers joined by ';', and the body, joined by "\n", HMAC-SHA256 hex.
func cfSig(secret, method, path string, ms int64, body string) string {
	headers := "x-contentful-signed-headers:x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic;" +
		"x-contentful-timestamp:" + strconv.FormatInt(ms, 10) + ";x-contentful-topic:" + cfTopic
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(method + "\n" + path + "\n" + headers + "\n" + body))
	return hex.EncodeToString(m.Sum(nil))
}

func cfReq(rawURL, sig string, ms int64, body string, extra ...string) *Request {
	r := &Request{Method: "POST", URL: rawURL, Body: []byte(body), Headers: Headers{
		{"X-Contentful-Topic", cfTopic},
		{"X-Contentful-Timestamp", strconv.FormatInt(ms, 10)},
		{"X-Contentful-Signed-Headers", "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"},
		{"X-Contentful-Idempotency-Key", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	}}
	if sig != "\x00" {
		r.Headers = append(r.Headers, Header{"X-Contentful-Signature", sig})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		r = withHeader(r, extra[i], extra[i+1])
	}
	return r
}

func TestContentfulVerify(t *testing.T) {
	t.Parallel()
	p := Contentful()
	now := fixedNow.UnixMilli()
	good := cfSig(cfSecret, "POST", cfPath, now, cfBody)
	// cfReq's X-Contentful-Idempotency-Key is not among its signed headers, so it is not the
	// identity (see TestContentfulUnsignedIdempotencyKeyIsNotIdentity): the signed topic and the
	// body hash are.
	idem := cfTopic + ":" + bodySHA256ID([]byte(cfBody))
	at := func(d time.Duration) int64 { return fixedNow.Add(d).UnixMilli() }
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: cfReq(cfURL, good, now, cfBody), keys: []string{cfSecret}, wantKey: "k0", wantEvent: idem},
		{name: "body tampered by one trailing space", req: cfReq(cfURL, good, now, cfBody+" "), keys: []string{cfSecret}, wantReason: ReasonSignatureMismatch},
		{name: "query reordered", req: cfReq("https://hooks.example.com/api/resources?w=2&q=1", good, now, cfBody), keys: []string{cfSecret}, wantReason: ReasonSignatureMismatch},
		{name: "other host, same path: accepted (only the path is signed)", req: cfReq("https://proxy.internal/api/resources?q=1&w=2", good, now, cfBody), keys: []string{cfSecret}, wantKey: "k0", wantEvent: idem},
		{name: "method changed", req: func() *Request { r := cfReq(cfURL, good, now, cfBody); r.Method = "PUT"; return r }(), keys: []string{cfSecret}, wantReason: ReasonSignatureMismatch},
		{name: "signed header changed", req: cfReq(cfURL, good, now, cfBody, "X-Contentful-Topic", "ContentManagement.Entry.delete"), keys: []string{cfSecret}, wantReason: ReasonSignatureMismatch},
		{name: "signed header padded: trimmed, accepted", req: cfReq(cfURL, good, now, cfBody, "X-Contentful-Topic", "  "+cfTopic+" "), keys: []string{cfSecret}, wantKey: "k0", wantEvent: idem},
		{name: "unsigned header added: accepted", req: cfReq(cfURL, good, now, cfBody, "X-Other", "1"), keys: []string{cfSecret}, wantKey: "k0", wantEvent: idem},
		{name: "wrong secret", req: cfReq(cfURL, good, now, cfBody), keys: []string{cfSecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "malformed header", req: cfReq(cfURL, strings.ToUpper(good), now, cfBody), keys: []string{cfSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: cfReq(cfURL, "\x00", now, cfBody), keys: []string{cfSecret}, wantReason: ReasonMissingSignature},
		{name: "missing signed-headers", req: withoutHeader(cfReq(cfURL, good, now, cfBody), "X-Contentful-Signed-Headers"), keys: []string{cfSecret}, wantReason: ReasonMalformedSignature},
		{name: "signed-headers names an absent header", req: withoutHeader(cfReq(cfURL, good, now, cfBody), "X-Contentful-Topic"), keys: []string{cfSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing timestamp", req: withoutHeader(cfReq(cfURL, good, now, cfBody), "X-Contentful-Timestamp"), keys: []string{cfSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp in seconds is a different message", req: cfReq(cfURL, good, fixedNow.Unix(), cfBody), keys: []string{cfSecret}, wantReason: ReasonSignatureMismatch},
		{name: "no URL forwarded", req: cfReq("", good, now, cfBody), keys: []string{cfSecret}, wantReason: ReasonMissingSignature},
		{name: "stale", req: cfReq(cfURL, cfSig(cfSecret, "POST", cfPath, at(-301*time.Second), cfBody), at(-301*time.Second), cfBody), keys: []string{cfSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: cfReq(cfURL, cfSig(cfSecret, "POST", cfPath, at(301*time.Second), cfBody), at(301*time.Second), cfBody), keys: []string{cfSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "rotation: either secret", req: cfReq(cfURL, cfSig(cfSecretNew, "POST", cfPath, now, cfBody), now, cfBody), keys: []string{cfSecret, cfSecretNew}, wantKey: "k1", wantEvent: idem},
		{name: "identity: no idempotency key, body hash", req: withoutHeader(cfReq(cfURL, good, now, cfBody), "X-Contentful-Idempotency-Key"), keys: []string{cfSecret}, wantKey: "k0", wantEvent: cfTopic + ":" + bodySHA256ID([]byte(cfBody))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow, Tolerance: 5 * time.Minute})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

// TestContentfulRecomputedVector pins the signature for the toolkit's test secret and
// timestamp, recomputed outside Go (Python hmac with urllib quote standing in for
// querystring.escape and encodeURI); no fixed published signature was found.
func TestContentfulRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Contentful()
	const ms = 1603379941037
	const want = "67e7c6774f22040666c2cb2861569abf02de1e5d9dfb38947a64ddbb3bc31525"
	if got := cfSig(cfSecret, "POST", cfPath, ms, cfBody); got != want {
		t.Fatalf("independent signature %s, want %s", got, want)
	}
	req := cfReq(cfURL, want, ms, cfBody)
	res, err := p.Verify(req, keysFor(t, p, cfSecret), Params{Now: time.UnixMilli(ms + 1000)})
	checkOutcome(t, res, err, 0, "k0", req)
	h, err := p.Sign(SignInput{Body: []byte(cfBody), URL: cfURL, Method: "POST", Timestamp: time.UnixMilli(ms)}, []string{cfSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "x-contentful-signature"); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestContentfulPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://h.example/api/v1/resources/1": "/api/v1/resources/1",
		"https://h.example":                    "/",
		"https://h.example/a?b=c?d":            "/a?b%253Dc", // JavaScript split: text after a second '?' is dropped
		"https://h.example/a%20b/(x)":          "/a%2520b/(x)",
		"https://h.example/a?":                 "/a",
	} {
		got, ok := contentfulPath(in)
		if !ok || got != want {
			t.Errorf("contentfulPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, s := range []string{"", strings.Repeat("a", 63), strings.Repeat("a", 63) + " "} {
		if _, err := Contentful().ParseSecret(s); err == nil {
			t.Errorf("ParseSecret accepted a %d-character secret", len(s))
		}
	}
}

func FuzzContentfulSignature(f *testing.F) {
	p := Contentful()
	keys := keysFor(f, p, cfSecret)
	params := Params{Now: fixedNow, Tolerance: 5 * time.Minute}
	f.Add(cfSig(cfSecret, "POST", cfPath, fixedNow.UnixMilli(), cfBody), "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic", cfURL, []byte(cfBody), uint16(0), byte('0'))
	f.Fuzz(func(t *testing.T, sig, signedHeaders, rawURL string, body []byte, pos uint16, repl byte) {
		req := cfReq(rawURL, sig, fixedNow.UnixMilli(), string(body), "X-Contentful-Signed-Headers", signedHeaders)
		_, err := p.Verify(req, keys, params)
		checkAnswer(t, err)
		_, _ = contentfulPath(rawURL)
		sreq := signed(t, p, SignInput{Body: body, URL: cfURL, Method: "POST", Timestamp: fixedNow}, cfSecret)
		sreq.URL = cfURL
		checkMutation(t, p, keys, params, sreq, "x-contentful-signature", pos, repl)
	})
}

// TestContentfulFallbackIdentityKeepsTopic: without X-Contentful-Idempotency-Key, two
// deliveries whose bodies are byte-identical but whose X-Contentful-Topic differs are two
// events (an entry published, then unpublished, under a webhook whose transformation sends
// only the entry id), so they must not share an identity; a retry (same topic, same body)
// still must.
func TestContentfulFallbackIdentityKeepsTopic(t *testing.T) {
	t.Parallel()
	p := Contentful()
	keys := keysFor(t, p, cfSecret)
	ms := fixedNow.UnixMilli()
	const body = `{"entityId":"e1"}`
	req := func(topic string, signed string) *Request {
		var canonical []string
		for _, n := range strings.Split(signed, ",") {
			v := map[string]string{"x-contentful-signed-headers": signed, "x-contentful-timestamp": strconv.FormatInt(ms, 10), "x-contentful-topic": topic}[n]
			canonical = append(canonical, n+":"+v)
		}
		m := hmac.New(sha256.New, []byte(cfSecret))
		m.Write([]byte("POST\n" + cfPath + "\n" + strings.Join(canonical, ";") + "\n" + body))
		return &Request{Method: "POST", URL: cfURL, Body: []byte(body), Headers: Headers{
			{"X-Contentful-Topic", topic},
			{"X-Contentful-Timestamp", strconv.FormatInt(ms, 10)},
			{"X-Contentful-Signed-Headers", signed},
			{"X-Contentful-Signature", hex.EncodeToString(m.Sum(nil))},
		}}
	}
	const topicSigned = "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"
	idSigned := func(topic, signed string) string {
		t.Helper()
		res, err := p.Verify(req(topic, signed), keys, Params{Now: fixedNow, Tolerance: 5 * time.Minute})
		if err != nil {
			t.Fatalf("Verify(%s): %v", topic, err)
		}
		return res.EventID
	}
	id := func(topic string) string { t.Helper(); return idSigned(topic, topicSigned) }
	publish, unpublish := id("ContentManagement.Entry.publish"), id("ContentManagement.Entry.unpublish")
	if publish == unpublish {
		t.Fatalf("publish and unpublish with the same body share identity %q: the second event would be lost as DUPLICATE", publish)
	}
	if again := id("ContentManagement.Entry.publish"); again != publish {
		t.Fatalf("a retry got identity %q, the first attempt %q", again, publish)
	}
	// An unsigned topic stays out of the identity: a replay of a captured request within the
	// tolerance under another topic would otherwise be a new event.
	const topicUnsigned = "x-contentful-signed-headers,x-contentful-timestamp"
	if a, b := idSigned("ContentManagement.Entry.publish", topicUnsigned), idSigned("ContentManagement.Entry.unpublish", topicUnsigned); a != b || a != bodySHA256ID([]byte(body)) {
		t.Fatalf("with the topic unsigned, identities %q and %q, want both the body hash", a, b)
	}
}

// TestContentfulPathRawLikeToolkit: the official verifier (contentful/node-apps-toolkit
// src/requests/utils.ts getNormalizedEncodedURI, called by verifyRequest with the request's
// path as received, e.g. Express req.url) runs encodeURI over the raw path. A path character
// that Go's url.URL.EscapedPath re-escapes ('|', '^', '\\', raw UTF-8) must therefore be
// encoded once, not escaped by Go and then again by encodeURI. Wants computed with Node
// (v18+): encodeURI / querystring.escape as in getNormalizedEncodedURI.
func TestContentfulPathRawLikeToolkit(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{"/hooks/a|b", "/hooks/a%7Cb"},
		{"/hooks/a^b", "/hooks/a%5Eb"},
		{"/hooks/a`b", "/hooks/a%60b"},
		{"/hooks/{x}", "/hooks/%7Bx%7D"},
		{"/h/a\\b", "/h/a%5Cb"},
		{"/h/é", "/h/%C3%A9"},
		// Already percent-encoded: encodeURI escapes the '%' again, as before.
		{"/hooks/a%7Cb", "/hooks/a%257Cb"},
		{"/h/a%2Fb", "/h/a%252Fb"},
		{"/h/[x]", "/h/%5Bx%5D"},
		{"/h/a;b=c", "/h/a;b=c"},
		{"/h/x?a=1&b=%7C", "/h/x?a%253D1%2526b%253D%25257C"},
		{"/h/x?a=|", "/h/x?a%253D%257C"},
		{"", "/"},
	}
	for _, tc := range tests {
		got, ok := contentfulPath("https://example.com" + tc.raw)
		if !ok || got != tc.want {
			t.Errorf("contentfulPath(%q) = %q, %v; want %q (the toolkit's)", tc.raw, got, ok, tc.want)
		}
	}
}

// TestContentfulVerifyRawPipeInPath: a delivery to a path with a raw '|', signed as the
// toolkit signs it, is accepted.
func TestContentfulVerifyRawPipeInPath(t *testing.T) {
	t.Parallel()
	p := Contentful()
	now := fixedNow.UnixMilli()
	req := cfReq("https://hooks.example.com/hooks/a|b", cfSig(cfSecret, "POST", "/hooks/a%7Cb", now, cfBody), now, cfBody)
	res, err := p.Verify(req, keysFor(t, p, cfSecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}

// FuzzContentfulTarget: the signed request target cut from the forwarded URL. For a URL that
// url.Parse accepts as a hierarchical URL without a fragment, it is that URL's path as written
// (decoding to the path Go parsed; "/" when empty) and its query, byte for byte: never the
// authority, and nothing re-escaped.
func FuzzContentfulTarget(f *testing.F) {
	for _, s := range []string{"https://h/a|b?x=1", "https://h", "https://u:p@[::1]:8/x%2Fy?q", "//h/p", "/p?q", "HTTPS://H/%41", "///", "https:///x", "/a%zz/b", "/h/x#frag?q=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		target, ok := contentfulTarget(raw)
		u, err := url.Parse(raw)
		if !ok || err != nil || u.Opaque != "" || strings.Contains(raw, "#") {
			return
		}
		path, query, hasQuery := strings.Cut(target, "?")
		want := u.Path
		if want == "" {
			want = "/"
		}
		if dec, err := url.PathUnescape(path); err != nil || dec != want || query != u.RawQuery || hasQuery != (u.RawQuery != "" || u.ForceQuery) {
			t.Fatalf("contentfulTarget(%q) = %q; url.Parse: path %q, query %q", raw, target, u.Path, u.RawQuery)
		}
	})
}
