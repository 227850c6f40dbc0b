package protocol

import (
	"strings"
	"testing"
	"time"
)

// The published vectors of the official Python SDK, workos/workos-python tests/test_webhooks.py
// (fixtures mock_event_body / mock_header / mock_secret and mock_unknown_webhook_body /
// mock_unknown_webhook_header; the SDK accepts both with a huge tolerance and rejects
// mock_bad_secret "this_is_not_it_123"), recomputed independently with Python hmac/hashlib:
// hex HMAC-SHA256 of "1722443701539.{body}" keyed with the secret.
const (
	workosPySecret    = "2sAZJlbjP8Ce3rwkKEv2GfKef"
	workosPyBadSecret = "this_is_not_it_123"
	workosPyMillis    = 1722443701539
	workosPyEventID   = "event_01J44T8116Q5M0RYCFA6KWNXN9"
	workosPyBody      = `{"id":"event_01J44T8116Q5M0RYCFA6KWNXN9","data":{"id":"conn_01EHWNC0FCBHZ3BJ7EGKYXK0E6","name":"Foo Corp's Connection","state":"active","object":"connection","status":"linked","domains":[{"id":"conn_domain_01EHWNFTAFCF3CQAE5A9Q0P1YB","domain":"foo-corp.com","object":"connection_domain"}],"created_at":"2021-06-25T19:07:33.155Z","updated_at":"2021-06-25T19:07:33.155Z","external_key":"3QMR4u0Tok6SgwY2AWG6u6mkQ","connection_type":"OktaSAML","organization_id":"org_01EHWNCE74X7JSDV0X3SZ3KJNY"},"event":"connection.activated","created_at":"2021-06-25T19:07:33.155Z"}`
	workosPyHeader    = "t=1722443701539, v1=bd54a3768f461461c8439c2f97ab0d646ef3976f84d5d5b132d18f2fa89cdad5"
	workosPyUnkBody   = `{"id":"event_01J44T8116Q5M0RYCFA6KWNXN9","data":{"id":"meow_123","name":"Meow Corp","object":"kitten","status":"cuteness","created_at":"2021-06-25T19:07:33.155Z","updated_at":"2021-06-25T19:07:33.155Z"},"event":"kitten.created","created_at":"2021-06-25T19:07:33.155Z"}`
	workosPyUnkHeader = "t=1722443701539, v1=f82f88dd60d5bc8a803686a27f83ce148b8c37c54490c52b77d00d62da891f1b"
)

func TestWorkOSPythonSDKVectors(t *testing.T) {
	t.Parallel()
	p := WorkOS()
	at := Params{Now: time.UnixMilli(workosPyMillis)}
	cs := []verifyCase{
		{name: "published vector accepted", req: workosRequest(workosPyHeader, workosPyBody), keys: []string{workosPySecret}, params: at, wantKey: "k0", wantEvent: workosPyEventID},
		{name: "published unknown-event vector accepted", req: workosRequest(workosPyUnkHeader, workosPyUnkBody), keys: []string{workosPySecret}, params: at, wantKey: "k0", wantEvent: workosPyEventID},
		{name: "rotation: vector's secret second", req: workosRequest(workosPyHeader, workosPyBody), keys: []string{workosPyBadSecret, workosPySecret}, params: at, wantKey: "k1", wantEvent: workosPyEventID},
		{name: "one body byte changed", req: workosRequest(workosPyHeader, strings.Replace(workosPyBody, "Foo Corp", "Goo Corp", 1)), keys: []string{workosPySecret}, params: at, wantReason: ReasonSignatureMismatch},
		{name: "one signature byte changed", req: workosRequest(strings.Replace(workosPyHeader, "v1=bd", "v1=bc", 1), workosPyBody), keys: []string{workosPySecret}, params: at, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret (the SDK's mock_bad_secret)", req: workosRequest(workosPyHeader, workosPyBody), keys: []string{workosPyBadSecret}, params: at, wantReason: ReasonSignatureMismatch},
		{name: "stale: 181 s after t (SDK default tolerance 180 s)", req: workosRequest(workosPyHeader, workosPyBody), keys: []string{workosPySecret}, params: Params{Now: at.Now.Add(181 * time.Second)}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "the SDK's header without a timestamp", req: workosRequest(workosPyHeader[strings.Index(workosPyHeader, "v1="):], workosPyBody), keys: []string{workosPySecret}, params: at, wantReason: ReasonMalformedSignature},
		{name: "bodies swapped between the two vectors", req: workosRequest(workosPyHeader, workosPyUnkBody), keys: []string{workosPySecret}, params: at, wantReason: ReasonSignatureMismatch},
	}
	runVerifyCases(t, p, cs)
	h, err := p.Sign(SignInput{Body: []byte(workosPyBody), Timestamp: time.UnixMilli(workosPyMillis)}, []string{workosPySecret})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("WorkOS-Signature"); got != workosPyHeader {
		t.Fatalf("Sign = %q, want the published %q", got, workosPyHeader)
	}
}
