package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

const postmarkSecret = "pmhook:s3cr3t-from-the-url"

// Example bodies follow the payloads in Postmark's webhook docs
// (postmarkapp.com/developer/webhooks/delivery-webhook, bounce-webhook, open-tracking-webhook,
// click-webhook, subscription-change-webhook), trimmed to the fields that matter here.
const (
	postmarkDelivery = `{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","Recipient":"john@example.com","Tag":"welcome-email","DeliveredAt":"2019-11-05T16:33:54.9070259Z","Details":"Test delivery webhook details"}`
	postmarkBounce   = `{"RecordType":"Bounce","MessageStream":"outbound","ID":4323372036854775807,"Type":"HardBounce","TypeCode":1,"MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","Email":"john@example.com","BouncedAt":"2019-11-05T16:33:54.9070259Z"}`
	postmarkSpam     = `{"RecordType":"SpamComplaint","ID":42,"MessageID":"00000000-0000-0000-0000-000000000000","Email":"john@example.com"}`
	postmarkOpen     = `{"RecordType":"Open","MessageStream":"outbound","FirstOpen":true,"MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","Recipient":"john@example.com","ReceivedAt":"2019-11-05T16:33:54.9070259Z"}`
	postmarkClick    = `{"RecordType":"Click","MessageStream":"outbound","ClickLocation":"HTML","OriginalLink":"https://example.com","MessageID":"00000000-0000-0000-0000-000000000000","Recipient":"john@example.com","ReceivedAt":"2017-10-25T15:21:11.000Z"}`
	postmarkSub      = `{"RecordType":"SubscriptionChange","MessageID":"00000000-0000-0000-0000-000000000000","ServerID":123456,"MessageStream":"outbound","ChangedAt":"2020-02-01T10:53:34.416071Z","Recipient":"bounced-address@example.com","Origin":"Recipient","SuppressSending":true,"SuppressionReason":"HardBounce"}`
	postmarkInbound  = `{"FromName":"Postmarkapp Support","MessageID":"22c74902-a0c1-4511-804f-341342852c90","Subject":"Test subject","TextBody":"This is a test text body."}`
)

func postmarkHash(fields ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(fields, "\x00")))
	return hex.EncodeToString(sum[:16])
}

func TestPostmarkVerify(t *testing.T) {
	t.Parallel()
	p := Postmark()
	good := basicOf(postmarkSecret)
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: basicReq(good, postmarkDelivery), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "Delivery:883953f4-6105-42a2-a16a-77a8eac79483:john@example.com"},
		{name: "body tampered by one trailing space is accepted (not signed), same identity", req: basicReq(good, postmarkDelivery+" "), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "Delivery:883953f4-6105-42a2-a16a-77a8eac79483:john@example.com"},
		{name: "wrong secret", req: basicReq(good, postmarkDelivery), keys: []string{"pmhook:other"}, wantReason: ReasonSignatureMismatch},
		{name: "malformed header", req: basicReq("Basic %%%", postmarkDelivery), keys: []string{postmarkSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: basicReq("\x00", postmarkDelivery), keys: []string{postmarkSecret}, wantReason: ReasonMissingSignature},
		{name: "rotation: either authenticates", req: basicReq(basicOf("pmhook:new"), postmarkDelivery), keys: []string{postmarkSecret, "pmhook:new"}, wantKey: "k1", wantEvent: "Delivery:883953f4-6105-42a2-a16a-77a8eac79483:john@example.com"},
		{name: "identity: bounce id", req: basicReq(good, postmarkBounce), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "Bounce:4323372036854775807"},
		{name: "identity: spam complaint id", req: basicReq(good, postmarkSpam), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "SpamComplaint:42"},
		{name: "identity: open", req: basicReq(good, postmarkOpen), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "Open:883953f4-6105-42a2-a16a-77a8eac79483:" + postmarkHash("john@example.com", "2019-11-05T16:33:54.9070259Z")},
		{name: "identity: click", req: basicReq(good, postmarkClick), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "Click:00000000-0000-0000-0000-000000000000:" + postmarkHash("john@example.com", "2017-10-25T15:21:11.000Z", "https://example.com")},
		{name: "identity: subscription change", req: basicReq(good, postmarkSub), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "SubscriptionChange:00000000-0000-0000-0000-000000000000:" + postmarkHash("bounced-address@example.com", "2020-02-01T10:53:34.416071Z")},
		{name: "identity: inbound", req: basicReq(good, postmarkInbound), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: "Inbound:22c74902-a0c1-4511-804f-341342852c90"},
		{name: "identity missing: body hash", req: basicReq(good, `{"RecordType":"Open","MessageID":"m1"}`), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`{"RecordType":"Open","MessageID":"m1"}`))},
		{name: "identity: unknown record type, body hash", req: basicReq(good, `{"RecordType":"Future","MessageID":"m1"}`), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`{"RecordType":"Future","MessageID":"m1"}`))},
		{name: "identity: not JSON, body hash", req: basicReq(good, "x"), keys: []string{postmarkSecret}, wantKey: "k0", wantEvent: bodySHA256ID([]byte("x"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

// TestPostmarkSign checks the credentials Postmark derives from a URL such as
// https://Aladdin:open%20sesame@example.com/webhook: RFC 7617's example header.
func TestPostmarkSign(t *testing.T) {
	t.Parallel()
	p := Postmark()
	h, err := p.Sign(SignInput{Body: []byte(postmarkDelivery)}, []string{"Aladdin:open sesame"})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "Authorization"); got != "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==" {
		t.Fatalf("Authorization = %q", got)
	}
	if _, err := p.Sign(SignInput{}, nil); err == nil {
		t.Fatal("Sign without a secret succeeded")
	}
	if _, err := p.ParseSecret("no-colon"); err == nil {
		t.Fatal("ParseSecret accepted a secret without ':'")
	}
}

// FuzzPostmarkBody drives the identity parser: it never panics, always yields an identity,
// and the identity fits the server's 512-byte limit.
func FuzzPostmarkBody(f *testing.F) {
	for _, b := range []string{postmarkDelivery, postmarkClick, postmarkSub, postmarkInbound, `{"RecordType":"Bounce","ID":{}}`, "[]", ""} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id := postmarkEventID(body)
		if id == "" || len(id) > 512 {
			t.Fatalf("identity %q", id)
		}
	})
}
