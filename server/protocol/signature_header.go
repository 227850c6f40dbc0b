package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Signature headers that carry a timestamp beside the signatures, as key=value elements:
// "t=<unix>,v1=<sig>" (Mux, Persona, Sanity) and its variants with other keys, separators and
// millisecond timestamps (Calendly, Paddle, WorkOS).

// kvSignatures is a parsed "k=v<sep>k=v" signature header with one timestamp key and a
// signature key that may repeat (Calendly, Paddle, WorkOS).
type kvSignatures struct {
	// timestamp is the timestamp value as sent (digits only); it is signed verbatim.
	timestamp  string
	signatures [][]byte
	malformed  int
	others     int
}

// parseKVSignatures parses v, the value of header, split on sep with surrounding spaces
// trimmed. Every element must be key=value; tsKey must appear exactly once as decimal digits;
// sigKey values that are not size bytes of lowercase hex are counted as malformed. Errors are
// *Rejection.
func parseKVSignatures(header, v string, sep byte, tsKey, sigKey string, size int) (kvSignatures, error) {
	var out kvSignatures
	if strings.TrimSpace(v) == "" {
		return out, Reject(ReasonMalformedSignature, "%s is empty", header)
	}
	seenTS := false
	for _, part := range strings.Split(v, string(sep)) {
		part = strings.Trim(part, " ")
		key, value, ok := cutByte(part, '=')
		if !ok || key == "" || strings.IndexByte(value, '=') >= 0 {
			return out, Reject(ReasonMalformedSignature, "%s has an element that is not key=value", header)
		}
		switch key {
		case tsKey:
			if seenTS {
				return out, Reject(ReasonMalformedSignature, "%s has more than one %s", header, tsKey)
			}
			seenTS = true
			if _, ok := parseUnixSeconds(value); !ok {
				return out, Reject(ReasonMalformedSignature, "%s %s is not a decimal timestamp", header, tsKey)
			}
			out.timestamp = value
		case sigKey:
			sig, ok := decodeLowerHex(value, size)
			if !ok {
				out.malformed++
				continue
			}
			out.signatures = append(out.signatures, sig)
		default:
			out.others++
		}
	}
	if !seenTS {
		return out, Reject(ReasonMalformedSignature, "%s has no %s timestamp", header, tsKey)
	}
	if len(out.signatures) == 0 && out.malformed == 0 {
		return out, Reject(ReasonMissingSignature, "%s has no %s signature (%d element(s) of other schemes are ignored)", header, sigKey, out.others)
	}
	return out, nil
}

// timedMACProvider is a provider whose header is "ts=<time><sep>sig=<hex>..." with the
// signature an HMAC-SHA256 of "<time><join><body>" (Calendly, Paddle, WorkOS).
type timedMACProvider struct {
	name          string
	header        string
	sep           byte   // between elements
	signSep       string // what Sign writes between elements ("," or ", ")
	tsKey, sigKey string
	join          string // between the timestamp and the body in the signed message
	millis        bool   // the timestamp is unix milliseconds, not seconds
	tolerance     time.Duration
	secret        func(string) ([]byte, error)
	identity      func(*Request) (string, error)
}

// verify checks, in order: the header's presence and form, the signature, the timestamp
// against the tolerance (both directions), then the identity.
func (b timedMACProvider) verify(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(b.header)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", b.header)
	}
	h, err := parseKVSignatures(b.header, raw, b.sep, b.tsKey, b.sigKey, sha256.Size)
	if err != nil {
		return Result{}, err
	}
	keyID, ok := matchKey(keys, h.signatures, sha256.New, macMessage(req.Body, h.timestamp, b.join))
	if !ok {
		return Result{}, rejectNoMatch(b.header, h.malformed, keys)
	}
	ts, _ := parseUnixSeconds(h.timestamp) // digits only, checked by the parser
	tol := effectiveTolerance(p, b.tolerance)
	if b.millis {
		err = checkTimestampMillis(ts, p.Now, tol)
	} else {
		err = checkTimestamp(ts, p.Now, tol)
	}
	if err != nil {
		return Result{}, err
	}
	id, err := b.identity(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// sign writes the header with the timestamp and one signature under the first secret: these
// providers hold one secret per destination.
func (b timedMACProvider) sign(in SignInput, secrets []string) (Headers, error) {
	keys, err := parseSigningKeys(b.name, secrets, b.secret)
	if err != nil {
		return nil, err
	}
	if err := checkSignTimestamp(b.name, in.Timestamp); err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	if b.millis {
		ts = strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	}
	sig := hex.EncodeToString(hmacSum(sha256.New, keys[0], macMessage(in.Body, ts, b.join)))
	return Headers{{Name: b.header, Value: b.tsKey + "=" + ts + b.signSep + b.sigKey + "=" + sig}}, nil
}

// tvSignatureSet is one "t=<unix>,v1=<sig>" set (Mux, Persona, Sanity). Persona sends two
// sets, space-separated, while a secret rotates.
type tvSignatureSet struct {
	timestamp int64
	sigs      [][]byte
}

// tvSignatures is a parsed t=,v1= header.
type tvSignatures struct {
	groups    []tvSignatureSet
	malformed int // v1 values not in the expected encoding
	others    int // elements of other schemes
}

// parseTVSignatures parses a header of space-separated sets of comma-separated k=v elements,
// each set with exactly one t (decimal unix seconds) and any number of scheme signatures. A set
// without t, a repeated t, an element that is not k=v, or an empty header is malformed. No
// scheme signature at all (only other schemes) is a missing signature. Errors are *Rejection.
func parseTVSignatures(header, v, scheme string, enc digestEncoding, size int, allowSets bool) (tvSignatures, error) {
	var h tvSignatures
	if strings.TrimSpace(v) == "" {
		return h, Reject(ReasonMalformedSignature, "%s is empty", header)
	}
	sets := []string{v}
	if allowSets {
		sets = strings.Fields(v)
	}
	for _, set := range sets {
		var g tvSignatureSet
		seenT := false
		for _, part := range strings.Split(set, ",") {
			key, value, ok := strings.Cut(part, "=")
			if !ok || key == "" {
				return h, Reject(ReasonMalformedSignature, "%s has an element that is not key=value", header)
			}
			switch key {
			case "t":
				if seenT {
					return h, Reject(ReasonMalformedSignature, "%s has more than one t in a set", header)
				}
				seenT = true
				ts, ok := parseUnixSeconds(value)
				if !ok {
					return h, Reject(ReasonMalformedSignature, "%s t is not unix seconds", header)
				}
				g.timestamp = ts
			case scheme:
				sig, ok := enc.decode(value, size)
				if !ok {
					h.malformed++
					continue
				}
				g.sigs = append(g.sigs, sig)
			default:
				h.others++
			}
		}
		if !seenT {
			return h, Reject(ReasonMalformedSignature, "%s has a set without a t timestamp", header)
		}
		h.groups = append(h.groups, g)
	}
	n := 0
	for _, g := range h.groups {
		n += len(g.sigs)
	}
	if n == 0 && h.malformed == 0 {
		return h, Reject(ReasonMissingSignature, "%s has no %s signature (%d element(s) of other schemes are ignored)", header, scheme, h.others)
	}
	return h, nil
}

// matchTVSignatures finds a set and key that authenticate body, the message being
// "{t}{sep}{body}", and whose t passes check. It returns the matching key id, or a *Rejection:
// the first check failure when some set authenticated but none passed check (a stale set does
// not hide a fresh one), else why nothing matched.
func matchTVSignatures(header string, h tvSignatures, keys []Key, newHash func() hash.Hash, sep string, body []byte, check func(int64) error) (string, error) {
	var firstErr error
	for _, g := range h.groups {
		ts := strconv.FormatInt(g.timestamp, 10)
		keyID, ok := matchKey(keys, g.sigs, newHash, macMessage(body, ts, sep))
		if !ok {
			continue
		}
		err := check(g.timestamp)
		if err == nil {
			return keyID, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", rejectNoMatch(header, h.malformed, keys)
}

// checkTimestampMillis is checkTimestamp for a timestamp in unix milliseconds: accepted when
// it lies within tol of now in either direction, boundaries included.
func checkTimestampMillis(ms int64, now time.Time, tol time.Duration) error {
	d := now.Sub(time.UnixMilli(ms)) // saturates instead of overflowing
	switch {
	case d > tol:
		return Reject(ReasonTimestampOutOfTolerance, "timestamp is %s old, more than the %s tolerance", formatMillis(d), formatTolerance(tol))
	case d < -tol:
		return Reject(ReasonTimestampOutOfTolerance, "timestamp is %s in the future, more than the %s tolerance",
			formatMillis(time.UnixMilli(ms).Sub(now)), formatTolerance(tol))
	}
	return nil
}

// ceilSeconds rounds a non-negative duration up to whole seconds, without overflowing at the
// largest Duration (a saturated time.Sub).
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// formatMillis prints a distance in whole milliseconds ("412.5s").
func formatMillis(d time.Duration) string {
	return d.Truncate(time.Millisecond).String()
}

// checkSignTimestamp checks a SignInput timestamp the way every timed Sign needs it.
func checkSignTimestamp(provider string, t time.Time) error {
	if t.IsZero() || t.Unix() < 0 {
		return errors.New(provider + ": sign needs a timestamp at or after 1970")
	}
	return nil
}
