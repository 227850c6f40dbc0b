package protocol

import (
	"strings"
	"testing"
	"time"
)

// The secret, body and signature of go-pagerduty's webhookv3/webhookv3_test.go
// (PagerDuty/go-pagerduty, TestVerifySignature "valid"), plus its "mismatch" signature.
const (
	pagerdutySecret      = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK"
	pagerdutySecretNew   = "3f8WbqJ4s0hFSr6Yx2m9ZKt7LQwP1vNcE5aUoGdRiTjXyHk0Bz+lM4pCe8nVq2A/"
	pagerdutyVectorSig   = "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd"
	pagerdutyMismatchSig = "v1=7020c8a7ec668a9b7012bc3dd82e483394b038f4230acc6785efbf2a7d8bcaf5"
	pagerdutyWebhookID   = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
	pagerdutyVectorBody  = `{"event":{"id":"01BWDWL3NYY7LUFPZCC28QUCMK","event_type":"incident.priority_updated","resource_type":"incident","occurred_at":"2021-04-26T17:36:27.458Z","agent":{"html_url":"https://acme.pagerduty.com/users/PLH1HKV","id":"PLH1HKV","self":"https://api.pagerduty.com/users/PLH1HKV","summary":"Tenex Engineer","type":"user_reference"},"client":null,"data":{"id":"PGR0VU2","type":"incident","self":"https://api.pagerduty.com/incidents/PGR0VU2","html_url":"https://acme.pagerduty.com/incidents/PGR0VU2","number":2,"status":"triggered","title":"A little bump in the road","service":{"html_url":"https://acme.pagerduty.com/services/PF9KMXH","id":"PF9KMXH","self":"https://api.pagerduty.com/services/PF9KMXH","summary":"API Service","type":"service_reference"},"assignees":[{"html_url":"https://acme.pagerduty.com/users/PTUXL6G","id":"PTUXL6G","self":"https://api.pagerduty.com/users/PTUXL6G","summary":"User 123","type":"user_reference"}],"escalation_policy":{"html_url":"https://acme.pagerduty.com/escalation_policies/PUS0KTE","id":"PUS0KTE","self":"https://api.pagerduty.com/escalation_policies/PUS0KTE","summary":"Default","type":"escalation_policy_reference"},"teams":[{"html_url":"https://acme.pagerduty.com/teams/PFCVPS0","id":"PFCVPS0","self":"https://api.pagerduty.com/teams/PFCVPS0","summary":"Engineering","type":"team_reference"}],"priority":{"html_url":"https://acme.pagerduty.com/account/incident_priorities","id":"PSO75BM","self":"https://api.pagerduty.com/priorities/PSO75BM","summary":"P1","type":"priority_reference"},"urgency":"high","conference_bridge":{"conference_number":1000,"conference_url":"https://example.com"},"resolve_reason":null}}}`
)

func pagerdutyRequest(sig string) *Request {
	return &Request{Method: "POST", Body: []byte(pagerdutyVectorBody), Headers: Headers{
		{Name: "X-PagerDuty-Signature", Value: sig}, {Name: "X-Webhook-Id", Value: pagerdutyWebhookID},
	}}
}

func TestPagerDutyVerify(t *testing.T) {
	t.Parallel()
	p := PagerDuty()
	in := SignInput{Body: []byte(pagerdutyVectorBody), EventID: pagerdutyWebhookID}
	good := signed(t, p, in, pagerdutySecret)
	fx := signingFixture{
		p: p, secret: pagerdutySecret, secretNew: pagerdutySecretNew, in: in, wantEvent: pagerdutyWebhookID,
		sigHeader: "X-PagerDuty-Signature", list: true,
		noID:      withoutHeader(good, "X-Webhook-Id"),
		malformed: []string{"garbage", "v1=", "v1=zz" + pagerdutyVectorSig[5:], "v1=" + strings.ToUpper(pagerdutyVectorSig[3:]), pagerdutyVectorSig[3:], pagerdutyMismatchSig + ",v1=nothex", ","},
		missing:   []string{"v2=" + pagerdutyVectorSig[3:], "v0=abc,v9=def"},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "published vector", req: pagerdutyRequest(pagerdutyVectorSig), keys: []string{pagerdutySecret}, wantKey: "k0", wantEvent: pagerdutyWebhookID},
		verifyCase{name: "published mismatch", req: pagerdutyRequest(pagerdutyMismatchSig), keys: []string{pagerdutySecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "several signatures, vector last", req: pagerdutyRequest(pagerdutyMismatchSig + "," + pagerdutyVectorSig), keys: []string{pagerdutySecret}, wantKey: "k0", wantEvent: pagerdutyWebhookID},
		verifyCase{name: "spaces after commas tolerated", req: pagerdutyRequest(pagerdutyMismatchSig + ", " + pagerdutyVectorSig), keys: []string{pagerdutySecret}, wantKey: "k0", wantEvent: pagerdutyWebhookID},
		verifyCase{name: "unknown version beside v1 ignored", req: pagerdutyRequest("v2=whatever," + pagerdutyVectorSig), keys: []string{pagerdutySecret}, wantKey: "k0", wantEvent: pagerdutyWebhookID},
		verifyCase{name: "malformed beside a matching v1", req: pagerdutyRequest("v1=nothex," + pagerdutyVectorSig), keys: []string{pagerdutySecret}, wantKey: "k0", wantEvent: pagerdutyWebhookID},
		verifyCase{name: "empty X-Webhook-Id", req: withHeader(pagerdutyRequest(pagerdutyVectorSig), "X-Webhook-Id", ""), keys: []string{pagerdutySecret}, wantReason: ReasonMissingEventID},
		verifyCase{name: "nothing is timed", req: pagerdutyRequest(pagerdutyVectorSig), keys: []string{pagerdutySecret}, params: Params{Now: time.Unix(4_000_000_000, 0)}, wantKey: "k0", wantEvent: pagerdutyWebhookID},
	)
	runVerifyCases(t, p, cs)
}

// TestPagerDutySignMatchesVector: our Sign reproduces go-pagerduty's published signature, and
// during rotation sends one v1 per secret in the order given.
func TestPagerDutySignMatchesVector(t *testing.T) {
	t.Parallel()
	h, err := PagerDuty().Sign(SignInput{Body: []byte(pagerdutyVectorBody), EventID: pagerdutyWebhookID}, []string{pagerdutySecret, pagerdutySecretNew})
	if err != nil {
		t.Fatal(err)
	}
	want := pagerdutyVectorSig + ",v1=" + hmacSHA256Hex(pagerdutySecretNew, pagerdutyVectorBody)
	if got := header(&Request{Headers: h}, "X-PagerDuty-Signature"); got != want {
		t.Fatalf("X-PagerDuty-Signature = %q, want %q", got, want)
	}
	if got := header(&Request{Headers: h}, "X-Webhook-Id"); got != pagerdutyWebhookID {
		t.Fatalf("X-Webhook-Id = %q", got)
	}
}

func FuzzPagerDutySignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, PagerDuty(), pagerdutySecret, "X-PagerDuty-Signature",
		SignInput{Body: []byte(pagerdutyVectorBody), EventID: pagerdutyWebhookID}, Params{Now: fixedNow},
		pagerdutyMismatchSig+", "+pagerdutyVectorSig, "v1=,=,,", "v2=x")
}
