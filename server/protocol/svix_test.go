package protocol

import (
	"strconv"
	"testing"
	"time"
)

// svixCases are the cases every Svix-delivered provider (Svix, Clerk, Resend) passes.
func svixCases(t *testing.T, p *Protocol) []verifyCase {
	t.Helper()
	in := SignInput{Body: []byte(swBody), EventID: swID, Timestamp: fixedNow}
	good := signed(t, p, in, swSecret)
	at := func(d time.Duration) *Request {
		return signed(t, p, SignInput{Body: []byte(swBody), EventID: swID, Timestamp: fixedNowPlus(d)}, swSecret)
	}
	fx := signingFixture{
		p: p, secret: swSecret, secretNew: swSecretNew, in: in, wantEvent: swID, sigHeader: "svix-signature", list: true, other: "whsec_cmV0aXJlZCBzZWNyZXQgYnl0ZXM=",
		noID:      withoutHeader(good, "svix-id"),
		malformed: []string{"garbage", "v1,!!!!", "v1," + swWrongEntry[3:10], "   "},
		missing:   []string{"v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg=="},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "stale", req: at(-301 * time.Second), keys: []string{swSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "future", req: at(301 * time.Second), keys: []string{swSecret}, wantReason: ReasonTimestampOutOfTolerance},
		verifyCase{name: "exactly 300 s old is accepted", req: at(-300 * time.Second), keys: []string{swSecret}, wantKey: "k0", wantEvent: swID},
		verifyCase{name: "timestamp tampered", req: withHeader(good, "svix-timestamp", strconv.FormatInt(fixedNow.Unix()+1, 10)), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "id tampered", req: withHeader(good, "svix-id", swID+"x"), keys: []string{swSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "missing timestamp", req: withoutHeader(good, "svix-timestamp"), keys: []string{swSecret}, wantReason: ReasonMissingTimestamp},
		verifyCase{name: "several signatures, valid among others", req: withHeader(good, "svix-signature", swWrongEntry+" v1a,xyz "+header(good, "svix-signature")), keys: []string{swSecret}, wantKey: "k0", wantEvent: swID},
		verifyCase{name: "white-labelled webhook-* headers", req: swRequest(swID, strconv.FormatInt(fixedNow.Unix(), 10), header(good, "svix-signature"), swBody), keys: []string{swSecret}, wantKey: "k0", wantEvent: swID},
	)
	return cs
}

// checkSvixVector checks the known answer in svix/svix-webhooks go/webhook_test.go ("valid
// signature is valid", Svix-Id/Svix-Timestamp/Svix-Signature headers; the same vector is in
// the Svix manual-verification docs and the Standard Webhooks libraries): secret
// whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, id msg_p5jXN8AQM9LWM0D4loKWxJek, timestamp
// 1614265330, body {"test": 2432232314} → v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=.
func checkSvixVector(t *testing.T, p *Protocol) {
	t.Helper()
	const sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	at := time.Unix(1614265330, 0)
	req := &Request{Method: "POST", Body: []byte(swBody), Headers: Headers{
		{Name: "Svix-Id", Value: swID}, {Name: "Svix-Timestamp", Value: "1614265330"}, {Name: "Svix-Signature", Value: sig},
	}}
	res, err := p.Verify(req, keysFor(t, p, swSecret), Params{Now: at.Add(10 * time.Second)})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != swID {
		t.Fatalf("EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(swBody), EventID: swID, Timestamp: at}, []string{swSecret})
	if err != nil {
		t.Fatal(err)
	}
	want := Headers{{Name: "svix-id", Value: swID}, {Name: "svix-timestamp", Value: "1614265330"}, {Name: "svix-signature", Value: sig}}
	if len(h) != len(want) {
		t.Fatalf("Sign = %+v, want %+v", h, want)
	}
	for i := range want {
		if h[i] != want[i] {
			t.Fatalf("Sign = %+v, want %+v", h, want)
		}
	}
}

func TestSvixVerify(t *testing.T) {
	t.Parallel()
	runVerifyCases(t, Svix(), svixCases(t, Svix()))
}

func TestSvixPublishedVector(t *testing.T) {
	t.Parallel()
	checkSvixVector(t, Svix())
}

func TestSvixDescribed(t *testing.T) {
	t.Parallel()
	for _, p := range []*Protocol{Svix(), Clerk(), Resend()} {
		if !p.SignsTimestamp || p.DefaultTolerance != 300*time.Second || p.Retries == "" || p.DocsURL == "" {
			t.Errorf("%s: incomplete description %+v", p.Name, p)
		}
		if _, err := p.Sign(SignInput{Body: []byte(swBody), Timestamp: fixedNow}, []string{swSecret}); err == nil {
			t.Errorf("%s: Sign without an event id succeeded", p.Name)
		}
	}
}

func FuzzSvixSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Svix(), swSecret, "svix-signature",
		SignInput{Body: []byte(swBody), EventID: swID, Timestamp: fixedNow},
		Params{Now: fixedNow, Tolerance: 300 * time.Second},
		swWrongEntry+" v1a,abc", "v1,", ",,, ,")
}
