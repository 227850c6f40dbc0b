package protocol

import (
	"testing"
	"time"
)

func TestMailchimp(t *testing.T) {
	t.Parallel()
	p := Mailchimp()
	const secret = "s3cr3t-value-for-the-url"
	const next = "next-secret-value-for-rotation"
	keys := []Key{{ID: "k1", Material: []byte(secret)}, {ID: "k2", Material: []byte(next)}}
	body := ExampleBody(p, "a1")
	now := time.Unix(1_767_000_000, 0)
	verify := func(method, url string, options map[string]string) (Result, error) {
		return p.Verify(&Request{Method: method, URL: url, Body: body}, keys, Params{Now: now, Options: options})
	}
	for _, tc := range []struct {
		name    string
		method  string
		url     string
		options map[string]string
		keyID   string
		reason  Reason
	}{
		{"secret in the query", "POST", "https://hooks.example.com/mc?secret=" + secret, nil, "k1", 0},
		{"the other secret during rotation", "POST", "https://hooks.example.com/mc?x=1&secret=" + next, nil, "k2", 0},
		{"custom parameter", "POST", "https://hooks.example.com/mc?key=" + secret, map[string]string{"query_param": "key"}, "k1", 0},
		{"wrong secret", "POST", "https://hooks.example.com/mc?secret=guess-guess-guess-guess", nil, "", ReasonSignatureMismatch},
		{"no secret", "POST", "https://hooks.example.com/mc", nil, "", ReasonMissingSignature},
		{"repeated secret", "POST", "https://hooks.example.com/mc?secret=" + secret + "&secret=x", nil, "", ReasonMalformedSignature},
		{"secret under another name", "POST", "https://hooks.example.com/mc?key=" + secret, nil, "", ReasonMissingSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := verify(tc.method, tc.url, tc.options)
			if ReasonOf(err) != tc.reason {
				t.Fatalf("Verify = %+v, %v; want reason %v", res, err, tc.reason)
			}
			if tc.reason == 0 && (res.KeyID != tc.keyID || res.EventID != bodySHA256ID(body)) {
				t.Fatalf("result %+v", res)
			}
		})
	}
	t.Run("GET URL check is a handshake", func(t *testing.T) {
		res, err := verify("GET", "https://hooks.example.com/mc", nil)
		if err != nil || res.Handshake == nil || res.Handshake.Status != 200 {
			t.Fatalf("GET = %+v, %v", res, err)
		}
	})
	t.Run("sign puts the secret in the URL", func(t *testing.T) {
		signed, err := SignDelivery(p, SignInput{Body: body, URL: "https://hooks.example.com/mc?a=b"}, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := verify("POST", signed.URL, nil); err != nil {
			t.Fatalf("signed URL %q rejected: %v", signed.URL, err)
		}
	})
	t.Run("secrets and options are checked", func(t *testing.T) {
		for _, bad := range []string{"short", "has space in it and is long", "slash/in/the/secret/value"} {
			if _, err := p.ParseSecret(bad); err == nil {
				t.Errorf("ParseSecret(%q) accepted", bad)
			}
		}
		if err := p.ValidateOptions(map[string]string{"nope": "x"}); err == nil {
			t.Error("unknown option accepted")
		}
		if err := p.ValidateOptions(map[string]string{"query_param": "a b"}); err == nil {
			t.Error("unsafe query_param accepted")
		}
	})
}

// FuzzMailchimpURL drives the query parser with any URL: an answer or a rejection, never a
// panic; and the signed URL with one byte of its secret changed never authenticates.
func FuzzMailchimpURL(f *testing.F) {
	p := Mailchimp()
	const secret = "s3cr3t-value-for-the-url"
	keys := []Key{{ID: "k1", Material: []byte(secret)}}
	body := ExampleBody(p, "a1")
	params := Params{Now: time.Unix(1_767_000_000, 0)}
	f.Add("https://hooks.example.com/mc?secret="+secret, uint16(3), byte('x'))
	f.Add("https://hooks.example.com/mc?secret=%zz&secret=", uint16(0), byte('%'))
	f.Add("::not a url?secret", uint16(1), byte(0))
	f.Fuzz(func(t *testing.T, url string, pos uint16, repl byte) {
		_, err := p.Verify(&Request{Method: "POST", URL: url, Body: body}, keys, params)
		checkAnswer(t, err)
		good := []byte("https://hooks.example.com/mc?secret=" + secret)
		i := len(good) - len(secret) + int(pos)%len(secret)
		if good[i] == repl {
			return
		}
		good[i] = repl
		if _, err := p.Verify(&Request{Method: "POST", URL: string(good), Body: body}, keys, params); err == nil || !signatureStage(ReasonOf(err)) {
			t.Fatalf("URL secret with byte %d changed to %q: %v", i, repl, err)
		}
	})
}
