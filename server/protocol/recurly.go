package protocol

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Recurly signs "{t}.{body}", t in Unix milliseconds, with HMAC-SHA256 keyed with the webhook
// endpoint's signing secret and sends recurly-signature: <t>,<hex>[,<hex>]: one digest per
// active secret while a secret rotates. Only JSON webhooks are signed (XML ones are not).
// Sources: recurly/recurly-client-ruby lib/recurly/webhooks.rb and spec/recurly/webhooks_spec.rb
// (default tolerance five minutes); https://docs.recurly.com/docs/signature-verification
const (
	recurlyName             = "recurly"
	recurlySignatureHeader  = "recurly-signature"
	recurlyDefaultTolerance = 300 * time.Second
)

// Recurly returns the protocol for Recurly JSON webhooks.
//
// Verify rejects, in this order: no recurly-signature (missing signature); an empty header or a
// first element that is not decimal milliseconds (malformed signature); no signature element
// (missing signature); no element matching a key (malformed signature if some element was not
// 64 lowercase hex digits and none matched, else signature mismatch); t more than the tolerance
// from Now in either direction, compared to the millisecond (timestamp out of tolerance); a body
// that is not a JSON object (malformed payload); no non-empty string "id" (missing event id).
func Recurly() *Protocol {
	return &Protocol{
		Name:             recurlyName,
		DisplayName:      "Recurly",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{t}.{body}", t in milliseconds, recurly-signature t,sig[,sig]`,
		SignsTimestamp:   true,
		DefaultTolerance: recurlyDefaultTolerance,
		IdentitySource:   `body JSON fields "id" (the object's), "object_type", "event_type" and "event_time": "<id>:<object_type>.<event_type>@<event_time>", since "id" alone repeats for every event of one object`,
		DocsURL:          "https://docs.recurly.com/docs/signature-verification",
		Retries: "Recurly retries a notification not answered 2xx up to 10 times, in the order the " +
			"notifications were created, the retry x (from 0) about 10 + x*2^(x+5) s after the previous " +
			"failure: 10 s, 74 s, 4.4 min, 13 min, ... 41 h for the last, some three days in all " +
			"(https://docs.recurly.com/recurly-subscriptions/v2021-02-25/docs/automatic-retries). The " +
			"official clients reject signatures older than five minutes by default, which presumes " +
			"each attempt is signed afresh; 300 s matches them. A retry resends the notification as " +
			"it was, so its identity stays the same.",
		ParseSecret:   sharedSecretParser("Recurly webhook signing secret"),
		Verify:        verifyRecurly,
		Sign:          signRecurly,
		ExampleSecret: sharedExample(""),
		ExampleBody:   recurlyExampleBody,
	}
}

// parseRecurlyHeader splits "<ms>,<sig>[,<sig>...]". It returns the timestamp, the well-formed
// signatures and how many elements were not. Errors are *Rejection.
func parseRecurlyHeader(v string) (int64, [][]byte, int, error) {
	if v == "" {
		return 0, nil, 0, Reject(ReasonMalformedSignature, "%s is empty", recurlySignatureHeader)
	}
	parts := strings.Split(v, ",")
	ms, ok := parseUnixSeconds(parts[0]) // the same digit rules, in milliseconds
	if !ok {
		return 0, nil, 0, Reject(ReasonMalformedSignature, "%s does not start with decimal milliseconds", recurlySignatureHeader)
	}
	if len(parts) == 1 {
		return 0, nil, 0, Reject(ReasonMissingSignature, "%s has a timestamp and no signature", recurlySignatureHeader)
	}
	var sigs [][]byte
	malformed := 0
	for _, p := range parts[1:] {
		sig, ok := decodeLowerHex(p, sha256.Size)
		if !ok {
			malformed++
			continue
		}
		sigs = append(sigs, sig)
	}
	return ms, sigs, malformed, nil
}

func verifyRecurly(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(recurlySignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", recurlySignatureHeader)
	}
	ms, sigs, malformed, err := parseRecurlyHeader(raw)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, sigs, sha256.New, macMessage(req.Body, strconv.FormatInt(ms, 10), "."))
	if !ok {
		return Result{}, rejectNoMatch(recurlySignatureHeader, malformed, keys)
	}
	if err := checkTimestampMillisRoundedUp(ms, p.Now, effectiveTolerance(p, recurlyDefaultTolerance)); err != nil {
		return Result{}, err
	}
	id, err := recurlyEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// recurlyEventID is "<id>:<object_type>.<event_type>@<event_time>". The JSON webhooks carry
// "only event type, object context, and identifiers" (Recurly's JSON vs XML page), and the
// "id" of the published examples is the object's: "New account" and "Updated account" show
// the same one. Keyed on "id" alone, an account's update after its creation, and each later
// update, would be answered DUPLICATE and lost. The type and time of the event tell them
// apart; a retry resends the notification as it was, so it keeps all four.
func recurlyEventID(body []byte) (string, error) {
	id, err := jsonBodyString(body, "id") // checks that the body is a JSON object, once
	if err != nil {
		return "", err
	}
	obj, _ := jsonObjectBytes(body)
	optional := func(key string) string {
		raw, ok := jsonMember(obj, key)
		if !ok {
			return ""
		}
		v, _ := jsonIDString(raw, key)
		return v
	}
	return id + ":" + optional("object_type") + "." + optional("event_type") + "@" + optional("event_time"), nil
}

// signRecurly produces recurly-signature with one digest per secret, as Recurly sends during a
// rotation.
func signRecurly(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("recurly: sign needs at least one secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.UnixMilli() < 0 {
		return nil, errors.New("recurly: sign needs a timestamp at or after 1970")
	}
	ts := strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	var b strings.Builder
	b.WriteString(ts)
	for i, s := range secrets {
		key, err := sharedSecretParser("Recurly webhook signing secret")(s)
		if err != nil {
			return nil, fmt.Errorf("recurly: secret %d: %w", i, err)
		}
		b.WriteByte(',')
		b.WriteString(digestHex.encode(hmacSum(sha256.New, key, macMessage(in.Body, ts, "."))))
	}
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: recurlySignatureHeader, Value: b.String()},
	}, nil
}

// recurlyExampleBody is an account-created JSON notification.
func recurlyExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"id":` + string(id) + `,"object_type":"account","site_id":"qc326l1hl8k9","event_type":"created","event_time":"2026-01-05T21:08:38Z","account_code":"adfas23zzz14123"}`)
}
