package protocol

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The published vector: recurly/recurly-client-ruby spec/recurly/webhooks_spec.rb ("with
// notification older than five minutes"), recomputed independently with openssl.
const (
	recurlyVectorSecret = "354fab5bd35f5a0d50845ee7e30165244468b13c2c343f104e4e730a59326d9d"
	recurlyVectorBody   = `{"id":"rjxwmwedwqug","object_type":"account","site_id":"qc326l1hl8k9","event_type":"created","event_time":"2022-09-13T21:18:40Z","account_code":"adfas23zzz14123"}`
	recurlyVectorHeader = "1663103925004,ad24699f3beaa24c9af2cc7ada3ce4c835da0090194241b9d3add83d27f14bc3"
	recurlySecret       = "recurly-signing-secret-one"
	recurlySecret2      = "recurly-signing-secret-two"
)

var recurlyVectorTime = time.UnixMilli(1663103925004)

func TestRecurlyVerify(t *testing.T) {
	t.Parallel()
	sig := strings.Repeat("ab", 32)
	providerSuite{
		p: Recurly(), secret: recurlySecret, secret2: recurlySecret2,
		sigHeader: "recurly-signature", eventID: "rjxwmwedwqug", wantEventID: "rjxwmwedwqug:account.created@2026-01-05T21:08:38Z",
		multiSig:  true,
		malformed: []string{"", "abc," + sig, "1700000000000," + strings.ToUpper(sig), "1700000000000,", "1700000000000,zz", " 1700000000000," + sig, "t=1700000000000,v1=" + sig},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, Recurly(), SignInput{Body: []byte(`{"object_type":"account"}`), Timestamp: fixedNow}, recurlySecret)
		},
	}.run(t)
}

func TestRecurlyPublishedVector(t *testing.T) {
	t.Parallel()
	p := Recurly()
	keys := keysFor(t, p, recurlyVectorSecret)
	req := &Request{Method: "POST", Headers: Headers{{Name: "recurly-signature", Value: recurlyVectorHeader}}, Body: []byte(recurlyVectorBody)}
	res, err := p.Verify(req, keys, Params{Now: recurlyVectorTime})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "rjxwmwedwqug:account.created@2022-09-13T21:18:40Z" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	// The SDK raises "out of date" for it by default, and accepts it with an infinite tolerance.
	res, err = p.Verify(req, keys, Params{Now: time.Now()})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", req)
	// "with multiple signatures in header": a short junk element beside the right digest.
	multi := withHeader(req, "recurly-signature", "1663103925004,de1ec7ab1e,"+recurlyVectorHeader[14:])
	res, err = p.Verify(multi, keys, Params{Now: recurlyVectorTime})
	checkOutcome(t, res, err, 0, "k0", multi)
	// "raises error if header timestamp is altered".
	altered := withHeader(req, "recurly-signature", "1663103926004,"+recurlyVectorHeader[14:])
	res, err = p.Verify(altered, keys, Params{Now: recurlyVectorTime})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", altered)
	// "raises error if secrets mismatched" / "if payload body is altered".
	res, err = p.Verify(req, keysFor(t, p, "key"), Params{Now: recurlyVectorTime})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	res, err = p.Verify(withBody(req, []byte("{}")), keys, Params{Now: recurlyVectorTime})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	// Only a timestamp: no signature at all.
	bare := withHeader(req, "recurly-signature", "1663103925004")
	res, err = p.Verify(bare, keys, Params{Now: recurlyVectorTime})
	checkOutcome(t, res, err, ReasonMissingSignature, "", bare)
	if got := signedHeader(t, p, SignInput{Body: []byte(recurlyVectorBody), Timestamp: recurlyVectorTime}, recurlyVectorSecret, "recurly-signature"); got != recurlyVectorHeader {
		t.Fatalf("Sign = %q, want %q", got, recurlyVectorHeader)
	}
	checkSecretsRefused(t, p, "", recurlyVectorSecret+" ")
}

func FuzzRecurlySignatureHeader(f *testing.F) {
	f.Add(recurlyVectorHeader, []byte(recurlyVectorBody), uint16(13), byte(','))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Recurly(), recurlyVectorSecret, "recurly-signature", nil, sig, body, pos, repl, recurlyVectorTime, "")
	})
}

// TestMillisecondTimestampsToleranceExact checks the providers that sign a timestamp in
// milliseconds against their tolerance to the millisecond: a timestamp half a second beyond it,
// in either direction, is out of tolerance, not truncated to a second that is within it.
func TestMillisecondTimestampsToleranceExact(t *testing.T) {
	t.Parallel()
	tol := 5 * time.Minute
	now := fixedNow.Add(250 * time.Millisecond)
	for _, c := range []struct {
		p      *Protocol
		secret string
	}{{Recurly(), recurlySecret}, {Webflow(), webflowSecret}} {
		for _, tc := range []struct {
			name string
			at   time.Time
			want Reason
		}{
			{"at the future edge", now.Add(tol), 0},
			{"half a second beyond the future edge", now.Add(tol + 500*time.Millisecond), ReasonTimestampOutOfTolerance},
			{"at the past edge", now.Add(-tol), 0},
			{"half a second beyond the past edge", now.Add(-tol - 500*time.Millisecond), ReasonTimestampOutOfTolerance},
		} {
			t.Run(c.p.Name+"/"+tc.name, func(t *testing.T) {
				req := signed(t, c.p, SignInput{Body: []byte(`{"id":"evt-1"}`), EventID: "evt-1", Timestamp: tc.at}, c.secret)
				res, err := c.p.Verify(req, keysFor(t, c.p, c.secret), Params{Now: now, Tolerance: tol})
				checkOutcome(t, res, err, tc.want, "k0", req)
			})
		}
	}
}

// TestRecurlyEventsOfOneObjectAreDistinct: the "id" of Recurly's JSON notifications is the
// object's (the published "New account" and "Updated account" examples share it), so an
// account's creation and its update, or two updates, must get distinct identities, or every
// one after the first is lost as a duplicate. A retry, the same notification, keeps its own.
func TestRecurlyEventsOfOneObjectAreDistinct(t *testing.T) {
	t.Parallel()
	p := Recurly()
	keys := keysFor(t, p, recurlySecret)
	id := func(body string) string {
		return eventIDOf(t, p, keys, signed(t, p, SignInput{Body: []byte(body), Timestamp: fixedNow}, recurlySecret), fixedNow)
	}
	const notification = `{"id":"r3oplsj3zo7a","object_type":"account","site_id":"r23khg9b5kyb","event_type":%q,"event_time":%q,"account_code":"verena"}`
	created := id(fmt.Sprintf(notification, "created", "2022-06-24T19:55:25Z"))
	updated := id(fmt.Sprintf(notification, "updated", "2022-06-24T19:55:25Z"))
	updatedLater := id(fmt.Sprintf(notification, "updated", "2022-06-25T08:00:00Z"))
	if created == updated || updated == updatedLater {
		t.Fatalf("events of one account share identities: created %q, updated %q, updated later %q", created, updated, updatedLater)
	}
	if retry := id(fmt.Sprintf(notification, "updated", "2022-06-24T19:55:25Z")); retry != updated {
		t.Fatalf("a retry got %q, want the original's %q", retry, updated)
	}
}
