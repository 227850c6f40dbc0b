package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The signed timestamp is the canonical decimal of webhook-timestamp, as the Go library signs
// it: a header written with a leading zero verifies against the canonical form, not against
// the header's own spelling.
func TestStandardWebhooksSignsCanonicalTimestamp(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	keys := keysFor(t, p, swSecret)
	now := fixedNow.Unix()
	raw := "0" + strconv.FormatInt(now, 10)

	canonical := swRequest(swID, raw, swEntry(t, swSecret, swID, now, swBody), swBody)
	res, err := p.Verify(canonical, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", canonical)
	if res.EventID != swID {
		t.Fatalf("EventID = %q, want %q", res.EventID, swID)
	}

	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(swSecret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(swID + "." + raw + "." + swBody))
	verbatim := swRequest(swID, raw, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)), swBody)
	res, err = p.Verify(verbatim, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", verbatim)
}

// Runs of spaces in webhook-signature separate entries and are not entries themselves: they
// neither turn a mismatch into a malformed signature nor make a header of other versions
// malformed.
func TestStandardWebhooksSpaceRunsAreNotEntries(t *testing.T) {
	t.Parallel()
	p := StandardWebhooks()
	keys := keysFor(t, p, swSecret)
	now := fixedNow.Unix()
	ts := strconv.FormatInt(now, 10)
	good := swEntry(t, swSecret, swID, now, swBody)
	v1a := "v1a," + base64.StdEncoding.EncodeToString(make([]byte, 64))
	tests := []struct {
		name       string
		sig        string
		wantReason Reason
	}{
		{"matching entry between runs of spaces", "  " + swWrongEntry + "   " + good + "  ", 0},
		{"no match among entries separated by two spaces", swWrongEntry + "  " + swWrongEntry, ReasonSignatureMismatch},
		{"trailing space after a mismatching entry", swWrongEntry + " ", ReasonSignatureMismatch},
		{"only v1a entries with spaces around", " " + v1a + "  ", ReasonMissingSignature},
		{"only spaces", "   ", ReasonMalformedSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := swRequest(swID, ts, tc.sig, swBody)
			res, err := p.Verify(req, keys, Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
		})
	}
}

// An endpoint's own tolerance replaces the 300 s default for Standard Webhooks and for Svix,
// narrower or wider, in both directions.
func TestStandardWebhooksEndpointTolerance(t *testing.T) {
	t.Parallel()
	now := fixedNow.Unix()
	tests := []struct {
		name       string
		offset     int64
		tolerance  time.Duration
		wantReason Reason
	}{
		{"narrower: 20s old outside 10s", -20, 10 * time.Second, ReasonTimestampOutOfTolerance},
		{"narrower: 20s ahead outside 10s", 20, 10 * time.Second, ReasonTimestampOutOfTolerance},
		{"narrower: 10s old inside 10s", -10, 10 * time.Second, 0},
		{"wider: 400s old inside 600s", -400, 600 * time.Second, 0},
		{"wider: 400s ahead inside 600s", 400, 600 * time.Second, 0},
		{"wider: 601s old outside 600s", -601, 600 * time.Second, ReasonTimestampOutOfTolerance},
	}
	for _, p := range []*Protocol{StandardWebhooks(), Svix()} {
		keys := keysFor(t, p, swSecret)
		for _, tc := range tests {
			t.Run(p.Name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ts := now + tc.offset
				req := swRequest(swID, strconv.FormatInt(ts, 10), swEntry(t, swSecret, swID, ts, swBody), swBody)
				res, err := p.Verify(req, keys, Params{Now: fixedNow, Tolerance: tc.tolerance})
				checkOutcome(t, res, err, tc.wantReason, "k0", req)
			})
		}
	}
}
