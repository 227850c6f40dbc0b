package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cfSignedReq signs cfBody for cfURL with the headers named in signed (lowercase, sorted as
// Contentful sends them), carrying the idempotency key idem.
func cfSignedReq(signed, idem string) *Request {
	ms := strconv.FormatInt(fixedNow.UnixMilli(), 10)
	values := map[string]string{
		"x-contentful-signed-headers":  signed,
		"x-contentful-timestamp":       ms,
		"x-contentful-topic":           cfTopic,
		"x-contentful-idempotency-key": idem,
	}
	var canonical []string
	for _, n := range strings.Split(signed, ",") {
		canonical = append(canonical, n+":"+values[n])
	}
	m := hmac.New(sha256.New, []byte(cfSecret))
	m.Write([]byte("POST\n" + cfPath + "\n" + strings.Join(canonical, ";") + "\n" + cfBody))
	return &Request{Method: "POST", URL: cfURL, Body: []byte(cfBody), Headers: Headers{
		{"X-Contentful-Topic", cfTopic},
		{"X-Contentful-Timestamp", ms},
		{"X-Contentful-Signed-Headers", signed},
		{"X-Contentful-Idempotency-Key", idem},
		{"X-Contentful-Signature", hex.EncodeToString(m.Sum(nil))},
	}}
}

// TestContentfulUnsignedIdempotencyKeyIsNotIdentity: the signature covers only the headers
// named in x-contentful-signed-headers, so an idempotency key outside that list is not
// authenticated. Whoever captures a delivery can resend it within the tolerance with another
// key; if the key were the identity, the resend would be a new event, ACCEPTED and processed
// a second time.
func TestContentfulUnsignedIdempotencyKeyIsNotIdentity(t *testing.T) {
	t.Parallel()
	p := Contentful()
	keys := keysFor(t, p, cfSecret)
	const signed = "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"
	genuine := cfSignedReq(signed, strings.Repeat("1", 64))
	replay := withHeader(genuine, "X-Contentful-Idempotency-Key", strings.Repeat("2", 64))
	params := Params{Now: fixedNow.Add(time.Minute), Tolerance: 5 * time.Minute}
	a, err := p.Verify(genuine, keys, params)
	if err != nil {
		t.Fatalf("genuine: %v", err)
	}
	b, err := p.Verify(replay, keys, params)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if a.EventID != b.EventID {
		t.Fatalf("a replay with another unsigned idempotency key got identity %q, the genuine delivery %q: the replay would be ACCEPTED as a new event", b.EventID, a.EventID)
	}
}

// TestContentfulSignedIdempotencyKeyIsIdentity: a key among the signed headers is authenticated
// and stays the identity; changing it breaks the signature; Sign signs the key it sends.
func TestContentfulSignedIdempotencyKeyIsIdentity(t *testing.T) {
	t.Parallel()
	p := Contentful()
	keys := keysFor(t, p, cfSecret)
	params := Params{Now: fixedNow, Tolerance: 5 * time.Minute}
	const signed = "x-contentful-idempotency-key,x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic"
	idem := strings.Repeat("3", 64)
	req := cfSignedReq(signed, idem)
	res, err := p.Verify(req, keys, params)
	if err != nil || res.EventID != idem {
		t.Fatalf("signed key: EventID %q, err %v; want %q", res.EventID, err, idem)
	}
	if _, err := p.Verify(withHeader(req, "X-Contentful-Idempotency-Key", strings.Repeat("4", 64)), keys, params); ReasonOf(err) != ReasonSignatureMismatch {
		t.Fatalf("changed signed key: err %v, want signature mismatch", err)
	}
	// The canonical request trims header values, so padding keeps the signature valid; it must
	// not make another identity either.
	if res, err := p.Verify(withHeader(req, "X-Contentful-Idempotency-Key", "  "+idem+" "), keys, params); err != nil || res.EventID != idem {
		t.Fatalf("padded signed key: EventID %q, err %v; want %q", res.EventID, err, idem)
	}
	sreq := signed2(t, p, SignInput{Body: []byte(cfBody), URL: cfURL, Method: "POST", Timestamp: fixedNow, EventID: "evt_1"})
	if res, err := p.Verify(sreq, keys, params); err != nil || res.EventID != "evt_1" {
		t.Fatalf("Sign round trip: EventID %q, err %v", res.EventID, err)
	}
}

func signed2(t *testing.T, p *Protocol, in SignInput) *Request {
	t.Helper()
	r := signed(t, p, in, cfSecret)
	r.URL = in.URL
	return r
}
