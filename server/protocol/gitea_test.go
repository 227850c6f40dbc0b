package protocol

import (
	"strings"
	"testing"
)

// Gitea publishes no vector; giteaVectorSig follows services/webhook/deliver.go in
// go-gitea/gitea (hex HMAC-SHA256 of the payload) and was computed independently:
// printf '%s' "$payload" | openssl dgst -sha256 -hmac gitea-vector-secret
const (
	giteaSecret     = "gitea-webhook-secret-one"
	giteaSecret2    = "gitea-webhook-secret-two"
	giteaVectorKey  = "gitea-vector-secret"
	giteaVectorBody = `{"ref":"refs/heads/main","after":"bffeb74224043ba2feb48d137756c8a9331c449a"}`
	giteaVectorForm = "payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%2C%22after%22%3A%22bffeb74224043ba2feb48d137756c8a9331c449a%22%7D"
	giteaVectorSig  = "faff3e91b07b52fc05a5e0d7d47e25488a6fbff81442ed73e8b3ceb26bfa8634"
	giteaDeliveryID = "a4c8d3f2-5b6e-4f7a-9c1d-2e3f4a5b6c7d"
)

func giteaRequest(contentType, body string, headers ...string) *Request {
	req := &Request{Method: "POST", Body: []byte(body), Headers: Headers{{Name: "Content-Type", Value: contentType}}}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Headers = append(req.Headers, Header{Name: headers[i], Value: headers[i+1]})
	}
	return req
}

func TestGiteaVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Gitea(), secret: giteaSecret, secret2: giteaSecret2,
		sigHeader: "X-Gitea-Signature", eventID: giteaDeliveryID, wantEventID: giteaDeliveryID,
		malformed: []string{"", "zz", strings.ToUpper(giteaVectorSig), "sha256=" + giteaVectorSig, giteaVectorSig[1:]},
		noIdentity: func(t *testing.T) *Request {
			return withoutHeader(signed(t, Gitea(), SignInput{Body: []byte(giteaVectorBody), EventID: "x"}, giteaSecret), "X-Gitea-Delivery")
		},
	}.run(t)
}

func TestGiteaContentTypes(t *testing.T) {
	t.Parallel()
	p := Gitea()
	keys := keysFor(t, p, giteaVectorKey)
	for _, tc := range []struct {
		name, ct, body string
		wantReason     Reason
	}{
		{name: "json", ct: "application/json", body: giteaVectorBody},
		{name: "json with charset", ct: "application/json; charset=utf-8", body: giteaVectorBody},
		{name: "form: the decoded payload field is signed", ct: "application/x-www-form-urlencoded", body: giteaVectorForm},
		{name: "form with charset", ct: "application/x-www-form-urlencoded; charset=UTF-8", body: giteaVectorForm},
		{name: "form body verified as raw bytes is not the payload", ct: "application/json", body: giteaVectorForm, wantReason: ReasonSignatureMismatch},
		{name: "form without payload field", ct: "application/x-www-form-urlencoded", body: "x=1", wantReason: ReasonMalformedPayload},
		{name: "form with two payload fields", ct: "application/x-www-form-urlencoded", body: giteaVectorForm + "&" + giteaVectorForm, wantReason: ReasonMalformedPayload},
		{name: "form payload tampered", ct: "application/x-www-form-urlencoded", body: giteaVectorForm + "+", wantReason: ReasonSignatureMismatch},
		{name: "no content type: body as is", ct: "", body: giteaVectorBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := giteaRequest(tc.ct, tc.body, "X-Gitea-Signature", giteaVectorSig, "X-Gitea-Delivery", giteaDeliveryID)
			res, err := p.Verify(req, keys, Params{})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
			if tc.wantReason == 0 && res.EventID != giteaDeliveryID {
				t.Fatalf("EventID = %q", res.EventID)
			}
		})
	}
}

func TestGiteaRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Gitea()
	h, err := p.Sign(SignInput{Body: []byte(giteaVectorBody), EventID: giteaDeliveryID}, []string{giteaVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"X-Gitea-Signature": giteaVectorSig, "X-Gogs-Signature": giteaVectorSig, "X-Hub-Signature-256": "sha256=" + giteaVectorSig, "X-Gitea-Delivery": giteaDeliveryID} {
		if got, _ := h.Get(name); got != want {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := p.Sign(SignInput{Body: []byte(giteaVectorBody)}, []string{giteaVectorKey}); err == nil {
		t.Fatal("signed without a delivery id")
	}
	checkSecretsRefused(t, p, "", "gitea-x\n")
}

func FuzzGiteaSignatureHeader(f *testing.F) {
	f.Add(giteaVectorSig, []byte(giteaVectorBody), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Gitea(), giteaVectorKey, "X-Gitea-Signature", Headers{{Name: "X-Gitea-Delivery", Value: giteaDeliveryID}}, sig, body, pos, repl, fixedNow, "")
	})
}

func FuzzGiteaFormBody(f *testing.F) {
	f.Add([]byte(giteaVectorForm))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := Gitea()
		req := giteaRequest("application/x-www-form-urlencoded", string(body), "X-Gitea-Signature", giteaVectorSig, "X-Gitea-Delivery", giteaDeliveryID)
		res, err := p.Verify(req, keysFor(t, p, giteaVectorKey), Params{})
		checkAnswer(t, err)
		if err == nil && res.KeyID != "k0" {
			t.Fatalf("accepted without a key: %+v", res)
		}
	})
}
