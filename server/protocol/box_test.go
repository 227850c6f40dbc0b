package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

const (
	boxKey1 = "SamplePrimaryKey"
	boxKey2 = "SampleSecondaryKey"
	boxBody = `{"type":"webhook_event","id":"eb0c4e06-751f-442c-86f8-fd5bb404dbec","created_at":"2016-07-11T10:10:32-07:00","trigger":"FILE.UPLOADED","webhook":{"id":"53","type":"webhook"},"source":{"id":"73835521473","type":"file","name":"Test-Image-3.png"}}`
)

// boxSig is the docs' manual verification: HMAC-SHA256 over the body bytes then the
// timestamp bytes, base64 (developer.box.com/guides/webhooks/v2/signatures-v2).
func boxSig(key, body, ts string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	m.Write([]byte(ts))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func boxReq(body, ts, primary, secondary string, extra ...string) *Request {
	r := &Request{Method: "POST", Body: []byte(body), Headers: Headers{{"BOX-DELIVERY-ID", "673a081b-bb4b-4d45-b4f1-4131a29c1d07"}}}
	if ts != "\x00" {
		r.Headers = append(r.Headers, Header{"BOX-DELIVERY-TIMESTAMP", ts})
	}
	if primary != "\x00" {
		r.Headers = append(r.Headers, Header{"BOX-SIGNATURE-PRIMARY", primary})
	}
	if secondary != "\x00" {
		r.Headers = append(r.Headers, Header{"BOX-SIGNATURE-SECONDARY", secondary})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		r.Headers = append(r.Headers, Header{extra[i], extra[i+1]})
	}
	return r
}

func TestBoxVerify(t *testing.T) {
	t.Parallel()
	p := Box()
	at := func(d time.Duration) string {
		return fixedNow.Add(d).In(time.FixedZone("PDT", -7*3600)).Format(time.RFC3339)
	}
	ts := at(0)
	s1, s2 := boxSig(boxKey1, boxBody, ts), boxSig(boxKey2, boxBody, ts)
	const id = "eb0c4e06-751f-442c-86f8-fd5bb404dbec"
	none := "\x00"
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: boxReq(boxBody, ts, s1, s2), keys: []string{boxKey1}, wantKey: "k0", wantEvent: id},
		{name: "body tampered by one trailing space", req: boxReq(boxBody+" ", ts, s1, s2), keys: []string{boxKey1, boxKey2}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: boxReq(boxBody, at(time.Second), s1, s2), keys: []string{boxKey1}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: boxReq(boxBody, ts, s1, s2), keys: []string{"OtherKey"}, wantReason: ReasonSignatureMismatch},
		{name: "malformed header", req: boxReq(boxBody, ts, "not base64", none), keys: []string{boxKey1}, wantReason: ReasonMalformedSignature},
		{name: "malformed primary, wrong secondary", req: boxReq(boxBody, ts, "x", boxSig("other", boxBody, ts)), keys: []string{boxKey1}, wantReason: ReasonMalformedSignature},
		{name: "malformed primary, good secondary", req: boxReq(boxBody, ts, "x", s2), keys: []string{boxKey2}, wantKey: "k0", wantEvent: id},
		{name: "missing headers", req: boxReq(boxBody, ts, none, none), keys: []string{boxKey1}, wantReason: ReasonMissingSignature},
		{name: "missing timestamp", req: boxReq(boxBody, none, s1, s2), keys: []string{boxKey1}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not RFC 3339", req: boxReq(boxBody, "1700000000", s1, s2), keys: []string{boxKey1}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: boxReq(boxBody, at(-601*time.Second), boxSig(boxKey1, boxBody, at(-601*time.Second)), none), keys: []string{boxKey1}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: boxReq(boxBody, at(601*time.Second), boxSig(boxKey1, boxBody, at(601*time.Second)), none), keys: []string{boxKey1}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "ten minutes old is accepted", req: boxReq(boxBody, at(-600*time.Second), boxSig(boxKey1, boxBody, at(-600*time.Second)), none), keys: []string{boxKey1}, wantKey: "k0", wantEvent: id},
		{name: "bad signature beats stale", req: boxReq(boxBody, at(-time.Hour), boxSig("forger", boxBody, at(-time.Hour)), none), keys: []string{boxKey1}, wantReason: ReasonSignatureMismatch},
		{name: "rotation: only the secondary key configured", req: boxReq(boxBody, ts, s1, s2), keys: []string{boxKey2}, wantKey: "k0", wantEvent: id},
		{name: "rotation: primary reset, secondary still valid", req: boxReq(boxBody, ts, boxSig("NewPrimaryKey", boxBody, ts), s2), keys: []string{boxKey1, boxKey2}, wantKey: "k1", wantEvent: id},
		{name: "rotation: new primary", req: boxReq(boxBody, ts, boxSig("NewPrimaryKey", boxBody, ts), s2), keys: []string{"NewPrimaryKey", boxKey2}, wantKey: "k0", wantEvent: id},
		{name: "unknown signature version", req: boxReq(boxBody, ts, s1, s2, "BOX-SIGNATURE-VERSION", "2"), keys: []string{boxKey1}, wantReason: ReasonMissingSignature},
		{name: "unknown algorithm", req: boxReq(boxBody, ts, s1, s2, "BOX-SIGNATURE-ALGORITHM", "HmacSHA512"), keys: []string{boxKey1}, wantReason: ReasonMissingSignature},
		{name: "identity: body without id falls back to the body hash", req: boxReq(`{"trigger":"X"}`, ts, boxSig(boxKey1, `{"trigger":"X"}`, ts), none), keys: []string{boxKey1}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`{"trigger":"X"}`))},
		{name: "identity: delivery id is not used", req: boxReq(boxBody, ts, s1, none, "BOX-DELIVERY-ID", "another"), keys: []string{boxKey1}, wantKey: "k0", wantEvent: id},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow, Tolerance: 10 * time.Minute})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

// TestBoxPublishedVector is the validate_message sample of box-python-sdk
// (docs/usage/webhooks.md and the box-sdk-gen migration guide): keys SamplePrimaryKey and
// SampleSecondaryKey, timestamp 2020-01-01T00:00:00-07:00.
func TestBoxPublishedVector(t *testing.T) {
	t.Parallel()
	p := Box()
	const (
		body = `{"webhook":{"id":"1234567890"},"trigger":"FILE.UPLOADED","source":{"id":"1234567890","type":"file","name":"Test.txt"}}`
		ts   = "2020-01-01T00:00:00-07:00"
		sig1 = "4KvFa5/unRL8aaqOlnbInTwkOmieZkn1ZVzsAJuRipE="
		sig2 = "yxxwBNk7tFyQSy95/VNKAf1o+j8WMPJuo/KcFc7OS0Q="
	)
	now, _ := time.Parse(time.RFC3339, ts)
	req := boxReq(body, ts, sig1, sig2, "BOX-SIGNATURE-ALGORITHM", "HmacSHA256", "BOX-SIGNATURE-VERSION", "1")
	for i, keys := range [][]string{{boxKey1}, {boxKey2}, {"x", boxKey2}} {
		res, err := p.Verify(req, keysFor(t, p, keys...), Params{Now: now.Add(time.Minute)})
		checkOutcome(t, res, err, 0, "k"+string(rune('0'+len(keys)-1)), req)
		if res.EventID != bodySHA256ID([]byte(body)) {
			t.Fatalf("case %d: EventID = %q", i, res.EventID)
		}
	}
	// Our Sign formats the time in UTC, so recompute the vector's signatures over that form.
	h, err := p.Sign(SignInput{Body: []byte(body), Timestamp: now}, []string{boxKey1, boxKey2})
	if err != nil {
		t.Fatal(err)
	}
	sreq := &Request{Headers: h, Body: []byte(body)}
	utc := header(sreq, "BOX-DELIVERY-TIMESTAMP")
	if utc != "2020-01-01T07:00:00Z" || header(sreq, "BOX-SIGNATURE-PRIMARY") != boxSig(boxKey1, body, utc) || header(sreq, "BOX-SIGNATURE-SECONDARY") != boxSig(boxKey2, body, utc) {
		t.Fatalf("Sign = %+v", h)
	}
	if boxSig(boxKey1, body, ts) != sig1 || boxSig(boxKey2, body, ts) != sig2 {
		t.Fatal("the independent computation disagrees with the published vector")
	}
	if _, err := p.Sign(SignInput{Body: []byte(body), Timestamp: now}, []string{"a", "b", "c"}); err == nil {
		t.Fatal("Sign with three keys succeeded")
	}
	if _, err := p.ParseSecret(" zzq9"); err == nil || strings.Contains(err.Error(), "zzq9") {
		t.Fatalf("ParseSecret = %v", err)
	}
}

func FuzzBoxSignature(f *testing.F) {
	p := Box()
	keys := keysFor(f, p, boxKey1)
	params := Params{Now: fixedNow, Tolerance: 10 * time.Minute}
	ts := fixedNow.UTC().Format(time.RFC3339)
	f.Add(boxSig(boxKey1, boxBody, ts), ts, []byte(boxBody), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(boxReq(string(body), ts, sig, sig), keys, params)
		checkAnswer(t, err)
		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, boxKey1)
		checkMutation(t, p, keys, params, req, "BOX-SIGNATURE-PRIMARY", pos, repl)
		// A changed timestamp is never accepted (it may fail to parse before the signature check).
		orig := header(req, "BOX-DELIVERY-TIMESTAMP")
		if i := int(pos) % len(orig); orig[i] != repl {
			m := []byte(orig)
			m[i] = repl
			if _, err := p.Verify(withHeader(req, "BOX-DELIVERY-TIMESTAMP", string(m)), keys, params); err == nil {
				t.Fatalf("accepted with timestamp byte %d changed", i)
			}
		}
	})
}
