package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (spec v1.0.0), also what Svix sends: webhook-signature is a space-delimited
// list of "v1,<base64 HMAC-SHA256>" entries over "{webhook-id}.{webhook-timestamp}.{body}",
// keyed with the base64-decoded whsec_ secret. One entry per active secret during rotation;
// v1a (ed25519) entries and other versions are not ours to check.
const (
	standardWebhooksName             = "standard-webhooks"
	standardWebhooksScheme           = "v1"
	standardWebhooksSecretPrefix     = "whsec_"
	standardWebhooksDefaultTolerance = 300 * time.Second
)

// standardWebhooksHeaders names one family of the three headers.
type standardWebhooksHeaders struct {
	id, timestamp, signature string
}

// The two header families: the spec's webhook-* names, and the svix-* names Svix sends unless
// an account has white-labelled them.
var (
	standardWebhooksSpecHeaders = standardWebhooksHeaders{id: "webhook-id", timestamp: "webhook-timestamp", signature: "webhook-signature"}
	standardWebhooksSvixHeaders = standardWebhooksHeaders{id: "svix-id", timestamp: "svix-timestamp", signature: "svix-signature"}
)

// standardWebhooksFamilies lists the header families in order of preference for Standard
// Webhooks senders: the spec's names, then Svix's. The family whose signature header is present
// supplies all three headers; families are never mixed.
var standardWebhooksFamilies = [...]standardWebhooksHeaders{standardWebhooksSpecHeaders, standardWebhooksSvixHeaders}

// svixFamilies is the order for deliveries from Svix: its libraries read the svix-* names and
// fall back to webhook-* only without them, so a delivery that also carries a webhook-* set
// signed by someone else (a gateway re-signing what it forwards) is judged by Svix's own set.
// They take a set only when its three headers are all there and non-empty (wholeSets).
var svixFamilies = [...]standardWebhooksHeaders{standardWebhooksSvixHeaders, standardWebhooksSpecHeaders}

// StandardWebhooks returns the protocol for senders following the Standard Webhooks spec,
// Svix included (and the providers delivering through Svix, such as Clerk and Resend).
//
// Verify rejects, in this order: no webhook-signature (nor svix-signature) header (missing
// signature); a signature header with no entries, or whose entries are all unparseable or all
// of other versions with at least one unparseable (malformed signature); only entries of other
// versions such as v1a (missing signature); no or empty timestamp header, or one that is not
// decimal unix seconds (missing timestamp); no or empty id header (missing event id) — the id
// and timestamp are signed, so they are needed before the signature can be checked; no v1
// entry matching any key (malformed signature if some entry was unparseable, else signature
// mismatch); the timestamp more than the tolerance away from Now in either direction
// (timestamp out of tolerance).
func StandardWebhooks() *Protocol {
	return &Protocol{
		Name:             standardWebhooksName,
		DisplayName:      "Standard Webhooks (Svix)",
		SignatureScheme:  `HMAC-SHA256 (base64) of "{id}.{timestamp}.{body}", webhook-signature v1`,
		SignsTimestamp:   true,
		DefaultTolerance: standardWebhooksDefaultTolerance,
		IdentitySource:   "webhook-id header (svix-id)",
		DocsURL:          "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md",
		Retries:          "The spec recommends retrying after 5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h and 24h. Senders sign each attempt afresh with a new webhook-timestamp (Svix does), so the 300s tolerance applies to each attempt; webhook-id stays the same, so retries are duplicates.",
		ParseSecret:      parseStandardWebhooksSecret,
		Verify:           verifyStandardWebhooks,
		Sign:             signStandardWebhooks,
		ExampleSecret:    exampleStandardWebhooksSecret,
	}
}

// parseStandardWebhooksSecret decodes "whsec_<base64>" (the prefix is optional) to the HMAC
// key. Padded and unpadded base64 are both accepted: the Python library pads for you, the Go
// one does not.
func parseStandardWebhooksSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, invalidSecret("the Standard Webhooks secret is empty")
	}
	if strings.HasPrefix(secret, "whsk_") || strings.HasPrefix(secret, "whpk_") {
		return nil, invalidSecret("asymmetric (whsk_/whpk_, v1a ed25519) keys are not supported; use the whsec_ secret")
	}
	encoded := strings.TrimPrefix(secret, standardWebhooksSecretPrefix)
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(encoded)
	}
	if err != nil {
		// err carries only an offset, but it adds nothing the caller can use.
		return nil, invalidSecret("the Standard Webhooks secret is not standard base64 after the whsec_ prefix")
	}
	if len(key) == 0 {
		return nil, invalidSecret("the Standard Webhooks secret decodes to an empty key")
	}
	return key, nil
}

// standardWebhooksSignature is a parsed webhook-signature value.
type standardWebhooksSignature struct {
	// signatures are the well-formed v1 signatures, in header order.
	signatures [][]byte
	// malformed counts entries without a comma and v1 entries that are not 32 bytes of
	// padded standard base64.
	malformed int
	// others counts entries of other versions (v1a, v2, ...).
	others int
}

// parseStandardWebhooksSignature parses a webhook-signature value named header. Runs of spaces
// are tolerated. Its errors are *Rejection.
func parseStandardWebhooksSignature(header, v string) (standardWebhooksSignature, error) {
	var s standardWebhooksSignature
	entries := 0
	for _, entry := range strings.Split(v, " ") {
		if entry == "" {
			continue
		}
		entries++
		version, sig, ok := cutByte(entry, ',')
		switch {
		case !ok:
			s.malformed++
		case version == standardWebhooksScheme:
			b, ok := decodeStdBase64(sig, sha256.Size)
			if !ok {
				s.malformed++
				continue
			}
			s.signatures = append(s.signatures, b)
		default:
			s.others++
		}
	}
	switch {
	case entries == 0:
		return s, Reject(ReasonMalformedSignature, "%s is empty", header)
	case len(s.signatures) > 0:
		return s, nil
	case s.malformed > 0:
		return s, Reject(ReasonMalformedSignature, "%s has no well-formed v1 entry (%d unparseable)", header, s.malformed)
	}
	return s, Reject(ReasonMissingSignature,
		"%s has no v1 entry (%d entries of other versions such as v1a are ignored)", header, s.others)
}

func verifyStandardWebhooks(req *Request, keys []Key, p Params) (Result, error) {
	return verifyStandardWebhooksFamilies(req, keys, p, standardWebhooksFamilies, false)
}

// verifyStandardWebhooksFamilies verifies with the family pickStandardWebhooksFamily picks.
func verifyStandardWebhooksFamilies(req *Request, keys []Key, p Params, families [2]standardWebhooksHeaders, wholeSets bool) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	names, raw, found := pickStandardWebhooksFamily(req.Headers, families, wholeSets)
	if !found {
		return Result{}, Reject(ReasonMissingSignature, "no %s (or %s) header",
			families[0].signature, families[1].signature)
	}
	sig, err := parseStandardWebhooksSignature(names.signature, raw)
	if err != nil {
		return Result{}, err
	}
	tsRaw, _ := req.Headers.Get(names.timestamp)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", names.timestamp)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not decimal unix seconds", names.timestamp)
	}
	id, _ := req.Headers.Get(names.id)
	if id == "" {
		return Result{}, Reject(ReasonMissingEventID, "no %s header", names.id)
	}
	keyID, ok := matchKey(keys, sig.signatures, sha256.New, standardWebhooksMessage(id, ts, req.Body))
	if !ok {
		return Result{}, rejectNoMatch(names.signature, sig.malformed, keys)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, standardWebhooksDefaultTolerance)); err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// pickStandardWebhooksFamily returns the first of families (in order) whose signature header
// is present, and that header's value. With wholeSets it returns the first whose three headers
// are all present and non-empty, and only when none is, the first whose signature header is
// present (whose verification then says what its set lacks): the Svix libraries verify a
// svix-* set missing a header, or with one empty, beside a complete webhook-* set by the
// webhook-* set, where reading the svix-* set rejected the delivery.
func pickStandardWebhooksFamily(h Headers, families [2]standardWebhooksHeaders, wholeSets bool) (standardWebhooksHeaders, string, bool) {
	if wholeSets {
		for _, f := range families {
			id, _ := h.Get(f.id)
			ts, _ := h.Get(f.timestamp)
			if sig, _ := h.Get(f.signature); id != "" && ts != "" && sig != "" {
				return f, sig, true
			}
		}
	}
	for _, f := range families {
		if sig, ok := h.Get(f.signature); ok {
			return f, sig, true
		}
	}
	return standardWebhooksHeaders{}, "", false
}

// standardWebhooksMessage writes "{id}.{timestamp}.{body}" without copying the body. The
// timestamp is written in canonical decimal, as the Go library does.
func standardWebhooksMessage(id string, ts int64, body []byte) func(hash.Hash) {
	return func(mac hash.Hash) {
		var buf [24]byte
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write(strconv.AppendInt(buf[:0], ts, 10))
		mac.Write([]byte{'.'})
		mac.Write(body)
	}
}

// signStandardWebhooks produces webhook-id, webhook-timestamp and a webhook-signature with one
// v1 entry per secret, space-separated in the order given, as a sender rotating keys does.
func signStandardWebhooks(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("standard-webhooks: sign needs at least one secret")
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("standard-webhooks: %w for webhook-id (it is signed)", ErrSignNeedsEventID)
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("standard-webhooks: sign needs a timestamp at or after 1970")
	}
	ts := in.Timestamp.Unix()
	entries := make([]string, 0, len(secrets))
	for i, s := range secrets {
		key, err := parseStandardWebhooksSecret(s)
		if err != nil {
			return nil, fmt.Errorf("standard-webhooks: secret %d: %w", i, err)
		}
		sum := hmacSum(sha256.New, key, standardWebhooksMessage(in.EventID, ts, in.Body))
		entries = append(entries, standardWebhooksScheme+","+base64.StdEncoding.EncodeToString(sum))
	}
	names := standardWebhooksFamilies[0]
	return Headers{
		{Name: names.id, Value: in.EventID},
		{Name: names.timestamp, Value: strconv.FormatInt(ts, 10)},
		{Name: names.signature, Value: strings.Join(entries, " ")},
	}, nil
}
