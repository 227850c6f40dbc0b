package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

const (
	mandrillKey    = "KfFuThPttL_KoUyDndHW3A"
	mandrillKeyNew = "rotatedKey_0123456789a"
	mandrillURL    = "https://hooks.example.com/mandrill?tenant=7"
)

var mandrillEvents = `[{"event":"open","_id":"8f2b4d7c0d6a4a4c9d1e5a3b2c1d0e9f","ts":1365111111,"msg":{"email":"example.webhook@mandrillapp.com"}}]`

// mandrillSig computes the documented signature independently: the URL, then each POST key
// and value sorted by key, HMAC-SHA1, base64 (help article "How to Authenticate Webhook
// Requests", mandrill.zendesk.com/hc/en-us/articles/360039232513).
func mandrillSig(key, rawURL string, form url.Values) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(mandrillSigned(rawURL, form)))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// mandrillSigned is the text the signature covers: the URL, then each key and value sorted
// by key.
func mandrillSigned(rawURL string, form url.Values) string {
	data := rawURL
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	for i := range keys { // insertion sort, independent of the code under test
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	for _, k := range keys {
		data += k + form.Get(k)
	}
	return data
}

// mandrillSignedContentID computes the event id independently: "form-sha256:" and the hex
// SHA-256 of what the signature covers after the URL, each key and value sorted by key.
func mandrillSignedContentID(t *testing.T, body []byte) string {
	t.Helper()
	form, err := url.ParseQuery(string(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(mandrillSigned("", form)))
	return "form-sha256:" + hex.EncodeToString(sum[:])
}

func mandrillReq(method, rawURL, sig string, body string) *Request {
	r := &Request{Method: method, URL: rawURL, Body: []byte(body)}
	if sig != "\x00" {
		r.Headers = Headers{{Name: "X-Mandrill-Signature", Value: sig}}
	}
	return r
}

func TestMandrillVerify(t *testing.T) {
	t.Parallel()
	p := Mandrill()
	form := url.Values{"mandrill_events": {mandrillEvents}}
	body := form.Encode()
	good := mandrillSig(mandrillKey, mandrillURL, form)
	two := url.Values{"mandrill_events": {mandrillEvents}, "a_first": {"x y"}}
	emptyForm := url.Values{"mandrill_events": {"[]"}}
	tests := []struct {
		name          string
		req           *Request
		keys          []string
		wantReason    Reason
		wantKey       string
		wantHandshake bool
	}{
		{name: "accepted", req: mandrillReq("POST", mandrillURL, good, body), keys: []string{mandrillKey}, wantKey: "k0"},
		{name: "body tampered by one trailing space", req: mandrillReq("POST", mandrillURL, good, body+"+"), keys: []string{mandrillKey}, wantReason: ReasonSignatureMismatch},
		{name: "body tampered: another event", req: mandrillReq("POST", mandrillURL, good, strings.Replace(body, "open", "clck", 1)), keys: []string{mandrillKey}, wantReason: ReasonSignatureMismatch},
		{name: "URL differs by a trailing slash", req: mandrillReq("POST", "https://hooks.example.com/mandrill/?tenant=7", good, body), keys: []string{mandrillKey}, wantReason: ReasonSignatureMismatch},
		{name: "no URL forwarded", req: mandrillReq("POST", "", good, body), keys: []string{mandrillKey}, wantReason: ReasonMissingSignature},
		{name: "wrong secret", req: mandrillReq("POST", mandrillURL, good, body), keys: []string{"another-key"}, wantReason: ReasonSignatureMismatch},
		{name: "malformed header: hex", req: mandrillReq("POST", mandrillURL, strings.Repeat("ab", 20), body), keys: []string{mandrillKey}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: unpadded", req: mandrillReq("POST", mandrillURL, strings.TrimRight(good, "="), body), keys: []string{mandrillKey}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: mandrillReq("POST", mandrillURL, "\x00", body), keys: []string{mandrillKey}, wantReason: ReasonMissingSignature},
		{name: "rotation: old key", req: mandrillReq("POST", mandrillURL, good, body), keys: []string{mandrillKey, mandrillKeyNew}, wantKey: "k0"},
		{name: "rotation: new key", req: mandrillReq("POST", mandrillURL, mandrillSig(mandrillKeyNew, mandrillURL, form), body), keys: []string{mandrillKey, mandrillKeyNew}, wantKey: "k1"},
		{name: "several variables sorted by key", req: mandrillReq("POST", mandrillURL, mandrillSig(mandrillKey, mandrillURL, two), two.Encode()), keys: []string{mandrillKey}, wantKey: "k0"},
		{name: "body not a form", req: mandrillReq("POST", mandrillURL, good, "a=%zz"), keys: []string{mandrillKey}, wantReason: ReasonMalformedPayload},
		{name: "repeated variable", req: mandrillReq("POST", mandrillURL, good, body+"&"+body), keys: []string{mandrillKey}, wantReason: ReasonMalformedPayload},
		{name: "handshake: HEAD", req: mandrillReq("HEAD", mandrillURL, "\x00", ""), keys: []string{mandrillKey}, wantHandshake: true},
		{name: "handshake: empty batch signed with test-webhook", req: mandrillReq("POST", mandrillURL, mandrillSig("test-webhook", mandrillURL, emptyForm), emptyForm.Encode()), keys: []string{mandrillKey}, wantHandshake: true},
		{name: "handshake: empty batch signed with the real key", req: mandrillReq("POST", mandrillURL, mandrillSig(mandrillKey, mandrillURL, emptyForm), emptyForm.Encode()), keys: []string{mandrillKey}, wantKey: "k0", wantHandshake: true},
		{name: "forged handshake: empty batch, bad signature", req: mandrillReq("POST", mandrillURL, mandrillSig("guess", mandrillURL, emptyForm), emptyForm.Encode()), keys: []string{mandrillKey}, wantReason: ReasonSignatureMismatch},
		{name: "forged: events signed with test-webhook", req: mandrillReq("POST", mandrillURL, mandrillSig("test-webhook", mandrillURL, form), body), keys: []string{mandrillKey}, wantReason: ReasonSignatureMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason != 0 {
				return
			}
			if tc.wantHandshake {
				if res.Handshake == nil || res.Handshake.Status != 200 || res.EventID != "" {
					t.Fatalf("want a 200 handshake, got %+v", res)
				}
				return
			}
			if res.Handshake != nil || res.EventID != mandrillSignedContentID(t, tc.req.Body) {
				t.Fatalf("result %+v, want the identity of the signed content", res)
			}
		})
	}
}

func TestMandrillSign(t *testing.T) {
	t.Parallel()
	p := Mandrill()
	body := mandrillExampleBody("m_1")
	h, err := p.Sign(SignInput{Body: body, URL: mandrillURL}, []string{mandrillKey, mandrillKeyNew})
	if err != nil {
		t.Fatal(err)
	}
	form, _ := url.ParseQuery(string(body))
	if got := header(&Request{Headers: h}, "X-Mandrill-Signature"); got != mandrillSig(mandrillKey, mandrillURL, form) {
		t.Fatalf("X-Mandrill-Signature = %q", got)
	}
	if !strings.Contains(form.Get("mandrill_events"), `"_id":"m_1"`) {
		t.Fatalf("example body %s", body)
	}
	if _, err := p.Sign(SignInput{Body: body}, []string{mandrillKey}); err == nil {
		t.Fatal("Sign without a URL succeeded")
	}
	if got := mandrillJSONString("a\"b\\c\n"); got != `"a\"b\\c\u000a"` {
		t.Fatalf("mandrillJSONString = %s", got)
	}
}

func FuzzMandrillSignature(f *testing.F) {
	p := Mandrill()
	keys := keysFor(f, p, mandrillKey)
	form := url.Values{"mandrill_events": {mandrillEvents}}
	f.Add(mandrillSig(mandrillKey, mandrillURL, form), []byte(form.Encode()), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(mandrillReq("POST", mandrillURL, sig, string(body)), keys, Params{})
		checkAnswer(t, err)
		if _, err := mandrillForm(body); err != nil {
			return
		}
		req := signed(t, p, SignInput{Body: body, URL: mandrillURL}, mandrillKey)
		req.URL = mandrillURL
		checkMutation(t, p, keys, Params{}, req, "X-Mandrill-Signature", pos, repl)
	})
}

// TestMandrillReplayKeepsItsEventID checks that bodies which decode to the same signed pairs,
// or whose pairs run together the same, get the genuine delivery's event id: each verifies
// under the captured signature, so a replay in any of those forms must be a duplicate, not a
// new event. A different batch gets a different id.
func TestMandrillReplayKeepsItsEventID(t *testing.T) {
	t.Parallel()
	p := Mandrill()
	keys := keysFor(t, p, mandrillKey)
	form := url.Values{"mandrill_events": {mandrillEvents}}
	body := form.Encode()
	sig := mandrillSig(mandrillKey, mandrillURL, form)
	genuine, err := p.Verify(mandrillReq("POST", mandrillURL, sig, body), keys, Params{})
	if err != nil {
		t.Fatalf("genuine delivery: %v", err)
	}
	if !strings.HasPrefix(genuine.EventID, "form-sha256:") {
		t.Errorf("event id %q, want form-sha256:...", genuine.EventID)
	}
	resplit := url.Values{"mandrill_event": {"s" + mandrillEvents}}
	for name, replay := range map[string]string{
		"a letter of the key percent-encoded, a stray &": "&%6D" + strings.TrimPrefix(body, "m"),
		"the key split differently":                      resplit.Encode(),
		"the value's characters escaped differently":     "mandrill_events=" + url.PathEscape(mandrillEvents),
	} {
		got, err := p.Verify(mandrillReq("POST", mandrillURL, sig, replay), keys, Params{})
		if err != nil {
			t.Errorf("%s: %v (rejecting it would do too, but it verifies as signed)", name, err)
			continue
		}
		if got.EventID != genuine.EventID {
			t.Errorf("%s: event id %s, want the genuine delivery's %s", name, got.EventID, genuine.EventID)
		}
	}
	other := url.Values{"mandrill_events": {strings.Replace(mandrillEvents, `"open"`, `"click"`, 1)}}
	got, err := p.Verify(mandrillReq("POST", mandrillURL, mandrillSig(mandrillKey, mandrillURL, other), other.Encode()), keys, Params{})
	if err != nil || got.EventID == genuine.EventID {
		t.Errorf("another batch: event id %q, %v; want one of its own", got.EventID, err)
	}
}
