package protocol

import (
	"testing"
	"time"
)

// TestEveryProtocolRoundTrips holds every registered protocol to the same minimum: a delivery
// made by its own Sign with an example secret verifies and yields an identity; the same
// delivery with one byte of the body changed, or signed with another secret, does not.
// Provider-specific files test the details against official SDKs and published vectors.
func TestEveryProtocolRoundTrips(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_767_000_000, 0)
	for _, p := range Builtin() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			otherSigning, _, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			material, err := p.ParseSecret(verifying)
			if err != nil {
				t.Fatalf("ParseSecret(example) = %v", err)
			}
			keys := []Key{{ID: "k1", Material: material}}
			in := SignInput{Body: ExampleBody(p, "evt_conformance_1"), EventID: "evt_conformance_1", Timestamp: now, Method: "POST", URL: "https://hooks.example.com/in?x=1"}
			deliver := func(secret string, mutate func([]byte) []byte) (Result, error) {
				signed, err := SignDelivery(p, in, []string{secret})
				if err != nil {
					t.Fatalf("SignDelivery: %v", err)
				}
				body := signed.Body
				if mutate != nil {
					body = mutate(append([]byte(nil), body...))
				}
				return p.Verify(&Request{Method: in.Method, URL: signed.URL, Headers: signed.Headers, Body: body}, keys, Params{Now: now, Tolerance: 5 * time.Minute})
			}
			res, err := deliver(signing, nil)
			if err != nil {
				t.Fatalf("own signature rejected: %v", err)
			}
			if res.KeyID != "k1" || res.EventID == "" {
				t.Fatalf("result %+v: want key k1 and an event id", res)
			}
			if _, err := deliver(signing, func(b []byte) []byte { return append(b, ' ') }); err == nil && !p.StaticCredential {
				t.Error("a body with a trailing space was accepted")
			}
			if _, err := deliver(otherSigning, nil); err == nil {
				t.Error("a delivery signed with another secret was accepted")
			}
			if _, err := p.Verify(&Request{Method: in.Method, URL: in.URL, Body: in.Body}, keys, Params{Now: now}); ReasonOf(err) == 0 {
				t.Errorf("a delivery without headers gave %v, want a rejection", err)
			}
		})
	}
}

// TestEveryTimestampProtocolRefusesDistantTimes signs deliveries with timestamps far from now,
// up to centuries away, where a time.Sub saturates, and checks that every protocol that signs
// a timestamp refuses them (a signature can be captured and replayed, so the tolerance is part
// of authentication). A protocol may refuse to sign a time its format cannot carry; that time
// is then skipped for it.
func TestEveryTimestampProtocolRefusesDistantTimes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_767_000_000, 0)
	distant := map[string]time.Time{
		"an hour ahead":      now.Add(time.Hour),
		"an hour ago":        now.Add(-time.Hour),
		"a year ahead":       now.AddDate(1, 0, 0),
		"300 years ahead":    now.AddDate(300, 0, 0),
		"300 years ago":      now.AddDate(-300, 0, 0),
		"year 9999":          time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		"the Unix epoch":     time.Unix(0, 0),
		"before year 1970":   time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		"a second too early": now.Add(-5*time.Minute - time.Second),
		"a second too late":  now.Add(5*time.Minute + time.Second),
	}
	for _, p := range Builtin() {
		if !p.SignsTimestamp {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			material, err := p.ParseSecret(verifying)
			if err != nil {
				t.Fatal(err)
			}
			keys := []Key{{ID: "k1", Material: material}}
			signedSome := false
			for name, ts := range distant {
				in := SignInput{Body: ExampleBody(p, "evt_distant"), EventID: "evt_distant", Timestamp: ts, Method: "POST", URL: "https://hooks.example.com/in"}
				signed, err := SignDelivery(p, in, []string{signing})
				if err != nil {
					continue
				}
				signedSome = true
				_, err = p.Verify(&Request{Method: in.Method, URL: signed.URL, Headers: signed.Headers, Body: signed.Body}, keys, Params{Now: now, Tolerance: 5 * time.Minute})
				if reason := ReasonOf(err); reason != ReasonTimestampOutOfTolerance && reason != ReasonMalformedSignature {
					t.Errorf("timestamp %s (%s): got %v, want a timestamp or malformed-signature rejection", name, ts.Format(time.RFC3339), err)
				}
			}
			if !signedSome {
				t.Fatal("signed none of the times")
			}
		})
	}
}
