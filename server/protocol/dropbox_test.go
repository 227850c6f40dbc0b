package protocol

import (
	"testing"
	"time"
)

const (
	dropboxSecret    = "k3x9q2m7v1p8z4w"
	dropboxSecretNew = "a0s9d8f7g6h5j4k"
	dropboxBody      = `{"list_folder":{"accounts":["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},"delta":{"users":[12345678]}}`
)

func TestDropboxVerify(t *testing.T) {
	t.Parallel()
	p := Dropbox()
	in := SignInput{Body: []byte(dropboxBody)}
	good := signed(t, p, in, dropboxSecret)
	wantID := dropboxNotificationID([]byte(dropboxBody), fixedNow)
	indep := hmacSHA256Hex(dropboxSecret, dropboxBody)
	fx := signingFixture{
		p: p, secret: dropboxSecret, secretNew: dropboxSecretNew, in: in, wantEvent: wantID,
		sigHeader: "X-Dropbox-Signature",
		malformed: []string{"garbage", "sha256=" + indep, indep[:10]},
	}
	cs := fx.cases(t)
	getNoChallenge := &Request{Method: "GET", URL: "https://hooks.example.com/dropbox"}
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "X-Dropbox-Signature", indep), keys: []string{dropboxSecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "GET without challenge", req: getNoChallenge, keys: []string{dropboxSecret}, wantReason: ReasonMissingSignature},
		verifyCase{name: "GET with an unparseable query", req: &Request{Method: "GET", URL: "https://hooks.example.com/dropbox?challenge=%zz"}, keys: []string{dropboxSecret}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "POST with a challenge is still a notification", req: &Request{Method: "POST", URL: "https://hooks.example.com/dropbox?challenge=abc", Body: []byte(dropboxBody)}, keys: []string{dropboxSecret}, wantReason: ReasonMissingSignature},
	)
	runVerifyCases(t, p, cs)
}

func TestDropboxHandshake(t *testing.T) {
	t.Parallel()
	p := Dropbox()
	for _, tc := range []struct {
		name, url, want string
	}{
		{"absolute URL", "https://hooks.example.com/dropbox?challenge=OfcZ3_F3DTLR5Sz6ZV7vNg", "OfcZ3_F3DTLR5Sz6ZV7vNg"},
		{"path only, other params", "/in/dropbox?x=1&challenge=abc%2Fdef", "abc/def"},
		{"markup is echoed as text", "/in?challenge=%3Cscript%3E", "<script>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No keys: the GET is unsigned, so it is answered whatever the endpoint holds.
			res, err := p.Verify(&Request{Method: "GET", URL: tc.url}, nil, Params{Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			h := res.Handshake
			if h == nil || res.EventID != "" || res.KeyID != "" {
				t.Fatalf("result %+v: want a bare handshake", res)
			}
			if h.Status != 200 || string(h.Body) != tc.want {
				t.Fatalf("reply %d %q, want 200 %q", h.Status, h.Body, tc.want)
			}
			if ct, _ := h.Headers.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Fatalf("Content-Type %q", ct)
			}
			if ns, _ := h.Headers.Get("X-Content-Type-Options"); ns != "nosniff" {
				t.Fatalf("X-Content-Type-Options %q", ns)
			}
		})
	}
}

// TestDropboxDocumentedAlgorithm pins Sign to the official sample's construction
// (dropbox/mdwebhook app.py, hmac.new(APP_SECRET, request.data, sha256).hexdigest(); Dropbox
// publishes no fixed vector), computed with openssl:
// printf '%s' "$dropboxBody" | openssl dgst -sha256 -hmac "$dropboxSecret"
func TestDropboxDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Dropbox().Sign(SignInput{Body: []byte(dropboxBody)}, []string{dropboxSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "X-Dropbox-Signature" || h[0].Value != dropboxOpenSSL {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzDropboxSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Dropbox(), dropboxSecret, "X-Dropbox-Signature",
		SignInput{Body: []byte(dropboxBody)}, Params{Now: fixedNow},
		"", "sha256=00", "0")
}

// FuzzDropboxChallenge: any GET URL is answered with a handshake echoing exactly the challenge
// parameter, or with a rejection; never a panic, never an identity.
func FuzzDropboxChallenge(f *testing.F) {
	p := Dropbox()
	f.Add("https://hooks.example.com/dropbox?challenge=abc")
	f.Add("/x?challenge=%zz")
	f.Add("::")
	f.Fuzz(func(t *testing.T, u string) {
		res, err := p.Verify(&Request{Method: "GET", URL: u}, nil, Params{Now: fixedNow})
		checkAnswer(t, err)
		if err == nil && (res.Handshake == nil || res.EventID != "" || len(res.Handshake.Body) == 0) {
			t.Fatalf("GET %q gave %+v", u, res)
		}
	})
}

const dropboxOpenSSL = "953f6ae3169fa8f0f680b873c0eaa9d8736cc749fefb8020bedd7247f4446eb0"

// TestDropboxRepeatedNotificationsAreNotMerged: Dropbox sends the same body, byte for byte,
// for every change to an account ({"list_folder":{"accounts":[id]},...}), and only says
// "something changed, sync with your cursor". Two notifications minutes apart are two
// changes; merging them by the body hash would answer every later one DUPLICATE for the
// whole dedupe window, so the app would never hear of those changes. Each authenticated
// notification must get an identity of its own, stable for one verification.
func TestDropboxRepeatedNotificationsAreNotMerged(t *testing.T) {
	t.Parallel()
	p := Dropbox()
	req := signed(t, p, SignInput{Body: []byte(dropboxBody)}, dropboxSecret)
	keys := keysFor(t, p, dropboxSecret)
	first, again := eventIDOf(t, p, keys, req, fixedNow), eventIDOf(t, p, keys, req, fixedNow)
	if first == "" || first != again {
		t.Fatalf("one verification must name one event: %q then %q", first, again)
	}
	if later := eventIDOf(t, p, keys, req, fixedNow.Add(3*time.Minute)); later == first {
		t.Fatalf("a notification three minutes later got the same identity %q: it would be dropped as a duplicate", later)
	}
}
