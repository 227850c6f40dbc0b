package protocol

import "testing"

// The secret, body and signature of coinbase/coinbase-commerce-node test/testWebhook.spec.js
// ("should successfully verify signature and return event"), and its one-character-off
// secret from "should fail verification with invalid secret key".
const (
	coinbaseSecret      = "30291a20-0bd1-4267-9b0f-e6e7b123c0bf"
	coinbaseWrongSecret = "30291a20-0bd1-4267-9b0f-e6e7b123c0bg"
	coinbaseVectorSig   = "8be7742c7d372f08a6a3224edadf18a22b65fa9e28f3f2de97376cdaa092590d"
	coinbaseEventID     = "24934862-d980-46cb-9402-43c81b0cdba6"
	coinbaseVectorBody  = `{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created","api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","data":{"code":"66BEOV2A","name":"The Sovereign Individual","description":"Mastering the Transition to the Information Age","hosted_url":"https://commerce.coinbase.com/charges/66BEOV2A","created_at":"2017-01-31T20:49:02Z","expires_at":"2017-01-31T21:04:02Z","timeline":[{"time":"2017-01-31T20:49:02Z","status":"NEW"}],"metadata":{},"pricing_type":"no_price","payments":[],"addresses":{"bitcoin":"0000000000000000000000000000000000","ethereum":"0x0000000000000000000000000000000000000000","litecoin":"3000000000000000000000000000000000","bitcoincash":"bitcoincash:000000000000000000000000000000000000000000"}}}}`
)

func coinbaseRequest(sig, body string) *Request {
	return &Request{Method: "POST", Body: []byte(body), Headers: Headers{{Name: "X-CC-Webhook-Signature", Value: sig}}}
}

func TestCoinbaseCommerceVerify(t *testing.T) {
	t.Parallel()
	p := CoinbaseCommerce()
	in := SignInput{Body: []byte(coinbaseVectorBody)}
	fx := signingFixture{
		p: p, secret: coinbaseSecret, secretNew: "c0a9b8d7-6e5f-4a3b-2c1d-0e9f8a7b6c5d", in: in, wantEvent: coinbaseEventID,
		sigHeader: "X-CC-Webhook-Signature",
		noID:      coinbaseRequest(hmacSHA256Hex(coinbaseSecret, `{"id":1,"attempt_number":1}`), `{"id":1,"attempt_number":1}`),
		malformed: []string{"garbage", "sha256=" + coinbaseVectorSig, coinbaseVectorSig[:63], "8BE7742C7D372F08A6A3224EDADF18A22B65FA9E28F3F2DE97376CDAA092590D"},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "published vector", req: coinbaseRequest(coinbaseVectorSig, coinbaseVectorBody), keys: []string{coinbaseSecret}, wantKey: "k0", wantEvent: coinbaseEventID},
		verifyCase{name: "published vector, invalid secret", req: coinbaseRequest(coinbaseVectorSig, coinbaseVectorBody), keys: []string{coinbaseWrongSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "published vector, body not JSON", req: coinbaseRequest(coinbaseVectorSig, "Not json"), keys: []string{coinbaseSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "signed body not JSON", req: coinbaseRequest(hmacSHA256Hex(coinbaseSecret, "Not json"), "Not json"), keys: []string{coinbaseSecret}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "event not an object", req: coinbaseRequest(hmacSHA256Hex(coinbaseSecret, `{"event":"x"}`), `{"event":"x"}`), keys: []string{coinbaseSecret}, wantReason: ReasonMissingEventID},
		verifyCase{name: "outer id is not the identity", req: coinbaseRequest(hmacSHA256Hex(coinbaseSecret, `{"id":"abc","event":{"id":"evt-9"}}`), `{"id":"abc","event":{"id":"evt-9"}}`), keys: []string{coinbaseSecret}, wantKey: "k0", wantEvent: "evt-9"},
	)
	runVerifyCases(t, p, cs)
}

func TestCoinbaseCommerceSignMatchesVector(t *testing.T) {
	t.Parallel()
	h, err := CoinbaseCommerce().Sign(SignInput{Body: []byte(coinbaseVectorBody)}, []string{coinbaseSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Value != coinbaseVectorSig {
		t.Fatalf("Sign = %+v, want %s", h, coinbaseVectorSig)
	}
}

func FuzzCoinbaseCommerceSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, CoinbaseCommerce(), coinbaseSecret, "X-CC-Webhook-Signature",
		SignInput{Body: []byte(coinbaseVectorBody)}, Params{Now: fixedNow},
		coinbaseVectorSig, "", "zz")
}
