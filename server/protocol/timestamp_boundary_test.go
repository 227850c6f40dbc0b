package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"
)

// TestMillisecondTimestampBoundaries: protocols that sign a timestamp in milliseconds keep the
// tolerance to the millisecond in both directions, boundaries included, as checkTimestamp does
// for seconds: a timestamp exactly the tolerance old is accepted even when Now is not on a
// whole second, and one a millisecond beyond the tolerance either way is refused. Comparing
// whole seconds (ms/1000 against Now) refused up to a second of genuine deliveries at the old
// edge and accepted up to a second too far ahead.
func TestMillisecondTimestampBoundaries(t *testing.T) {
	t.Parallel()
	now := fixedNow.Add(700 * time.Millisecond)
	zoom := Zoom()
	zoomSigning, zoomKeys := exampleKeys(t, zoom)
	// zoomMillis is a Zoom delivery whose x-zm-request-timestamp is in milliseconds (13
	// digits), which Verify reads as such; Sign writes seconds, so it is built here.
	zoomMillis := func(at time.Time) *Request {
		ts := strconv.FormatInt(at.UnixMilli(), 10)
		body := ExampleBody(zoom, "evt_ms")
		sig := hmacSum(sha256.New, []byte(zoomSigning), slackMessage(ts, body))
		return &Request{Method: "POST", URL: "https://hooks.example.com/in", Body: body, Headers: Headers{
			{Name: zoomSignatureHeader, Value: "v0=" + hex.EncodeToString(sig)},
			{Name: zoomTimestampHeader, Value: ts},
		}}
	}
	for _, name := range []string{"frontapp", "sanity", "workos", "zoom"} {
		p, ok := Default().Lookup(name)
		if !ok {
			t.Fatalf("no protocol %s", name)
		}
		signing, keys := exampleKeys(t, p)
		tol := p.DefaultTolerance
		deliver := func(at time.Time) *Request {
			if name == "zoom" {
				return zoomMillis(at)
			}
			in := SignInput{Body: ExampleBody(p, "evt_ms"), EventID: "evt_ms", Timestamp: at, Method: "POST", URL: "https://hooks.example.com/in"}
			d, err := SignDelivery(p, in, []string{signing})
			if err != nil {
				t.Fatalf("%s: SignDelivery: %v", name, err)
			}
			return &Request{Method: in.Method, URL: d.URL, Headers: d.Headers, Body: d.Body}
		}
		if name == "zoom" {
			keys = zoomKeys
		}
		for _, c := range []struct {
			label  string
			at     time.Time
			reject bool
		}{
			{"exactly the tolerance old", now.Add(-tol), false},
			{"exactly the tolerance ahead", now.Add(tol), false},
			{"a millisecond too old", now.Add(-tol - time.Millisecond), true},
			{"a millisecond too far ahead", now.Add(tol + time.Millisecond), true},
			{"half a second inside the old edge", now.Add(-tol + 500*time.Millisecond), false},
		} {
			_, err := p.Verify(deliver(c.at), keys, Params{Now: now, Tolerance: tol})
			switch {
			case c.reject && ReasonOf(err) != ReasonTimestampOutOfTolerance:
				t.Errorf("%s, %s: got %v, want timestamp out of tolerance", name, c.label, err)
			case !c.reject && err != nil:
				t.Errorf("%s, %s: got %v, want accepted", name, c.label, err)
			}
		}
	}
}

// TestGenericHMACToleranceOptionIsBounded: the tolerance option of generic-hmac overrides the
// endpoint's tolerance, which the admin API caps at 7 days (server.MaxTolerance), since a
// window longer than the dedupe window lets a captured delivery be accepted again as a new
// event once its claim has expired. The option must be held to the same cap: refused by
// ValidateOptions, and a row stored before that was refused verifies under the cap.
func TestGenericHMACToleranceOptionIsBounded(t *testing.T) {
	t.Parallel()
	p := GenericHMAC()
	opts := func(tol string) map[string]string {
		return map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Timestamp", "tolerance": tol}
	}
	if err := p.ValidateOptions(opts("168h")); err != nil {
		t.Fatalf("7 days: %v", err)
	}
	for _, tol := range []string{"168h0m1s", "8760h", "2562047h"} {
		if err := p.ValidateOptions(opts(tol)); err == nil {
			t.Errorf("tolerance %s: accepted, want refused (over 7 days)", tol)
		}
	}
	// A row stored with a larger option before it was refused: a delivery 30 days old (past
	// the default dedupe window) must not verify.
	secret := "generic-secret-value"
	keys := []Key{{ID: "k1", Material: []byte(secret)}}
	signedAt := fixedNow.Add(-30 * 24 * time.Hour)
	in := SignInput{Body: []byte(`{"a":1}`), Timestamp: signedAt, Method: "POST", URL: "https://hooks.example.com/in", Options: opts("8760h")}
	d, err := SignDelivery(p, in, []string{secret})
	if err != nil {
		t.Fatalf("SignDelivery: %v", err)
	}
	_, err = p.Verify(&Request{Method: in.Method, URL: d.URL, Headers: d.Headers, Body: d.Body}, keys, Params{Now: fixedNow, Options: opts("8760h")})
	if ReasonOf(err) != ReasonTimestampOutOfTolerance {
		t.Errorf("30-day-old delivery under a stored 8760h option: got %v, want timestamp out of tolerance", err)
	}
}
