package protocol

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaultRegistry(t *testing.T) {
	t.Parallel()
	r := Default()
	var names []string
	for _, p := range r.All() {
		names = append(names, p.Name)
	}
	if len(names) != len(Builtin()) || !slices.IsSorted(names) {
		t.Fatalf("All() names = %s: want every built-in protocol once, ordered by name", strings.Join(names, ","))
	}
	for _, want := range []string{"github", "standard-webhooks", "stripe"} {
		if _, ok := r.Lookup(want); !ok {
			t.Fatalf("core protocol %q is not registered", want)
		}
	}
	for _, p := range Builtin() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			got, ok := r.Lookup(p.Name)
			if !ok || got.Name != p.Name {
				t.Fatalf("Lookup(%q) = %v, %v", p.Name, got, ok)
			}
			if p.DisplayName == "" || p.SignatureScheme == "" || p.IdentitySource == "" || p.DocsURL == "" {
				t.Fatalf("%s lacks a description: %+v", p.Name, p)
			}
			if p.SignsTimestamp != (p.DefaultTolerance > 0) {
				t.Fatalf("%s: SignsTimestamp %v but DefaultTolerance %v", p.Name, p.SignsTimestamp, p.DefaultTolerance)
			}
			if p.Retries == "" {
				t.Errorf("%s: Retries is empty; say how the provider retries and how the tolerance fits", p.Name)
			}
		})
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Fatal("Lookup of an unknown name succeeded")
	}
}

// TestBuiltinInstancesAreIndependent checks that Builtin hands out fresh values, so a caller
// editing its copy cannot change another's.
func TestBuiltinInstancesAreIndependent(t *testing.T) {
	t.Parallel()
	a, b := Builtin(), Builtin()
	a[0].DisplayName = "changed"
	if b[0].DisplayName == "changed" {
		t.Fatal("Builtin shares protocol values between calls")
	}
}

// TestNeverPanics feeds every protocol odd requests, keys and params.
func TestNeverPanics(t *testing.T) {
	t.Parallel()
	odd := []*Request{
		nil,
		{},
		{Headers: Headers{{Name: "", Value: ""}}},
		{Headers: Headers{{"Stripe-Signature", "t=9223372036854775807,v1=" + strings.Repeat("0", 64)}}},
		{Headers: Headers{{"Stripe-Signature", ",,,,=,=="}}},
		{Headers: Headers{{"X-Hub-Signature-256", "="}, {"X-Hub-Signature", "sha1="}}},
		{Headers: Headers{{"webhook-signature", "v1,"}, {"webhook-timestamp", "9223372036854775807"}, {"webhook-id", "."}}},
		{Headers: Headers{{"webhook-signature", "v1," + strings.Repeat("A", 43) + "="}, {"webhook-timestamp", "0"}, {"webhook-id", "x"}}},
	}
	keySets := [][]Key{nil, {{}}, {{ID: "k", Material: []byte("k")}}}
	params := []Params{{}, {Now: time.Unix(math.MaxInt64/2, 0), Tolerance: math.MaxInt64}, {Now: time.Unix(-1<<40, 0), Tolerance: -1}}
	for _, p := range Builtin() {
		for _, req := range odd {
			for _, keys := range keySets {
				for _, prm := range params {
					res, err := p.Verify(req, keys, prm)
					if err == nil {
						t.Fatalf("%s accepted %+v with %v: %+v", p.Name, req, keys, res)
					}
					if ReasonOf(err) == 0 {
						t.Fatalf("%s returned a non-rejection error %v", p.Name, err)
					}
				}
			}
		}
	}
}

func TestCheckTimestamp(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	tol := 300 * time.Second
	for _, tc := range []struct {
		name   string
		ts     int64
		now    time.Time
		tol    time.Duration
		detail string // empty: accepted
	}{
		{name: "now", ts: now.Unix(), now: now, tol: tol},
		{name: "at the old boundary", ts: now.Unix() - 300, now: now, tol: tol},
		{name: "at the future boundary", ts: now.Unix() + 300, now: now, tol: tol},
		{name: "one second too old", ts: now.Unix() - 301, now: now, tol: tol, detail: "timestamp is 301s old, more than the 300s tolerance"},
		{name: "one second too new", ts: now.Unix() + 301, now: now, tol: tol, detail: "timestamp is 301s in the future, more than the 300s tolerance"},
		{name: "412s old", ts: now.Unix() - 412, now: now, tol: tol, detail: "timestamp is 412s old, more than the 300s tolerance"},
		{name: "sub-second clock, just inside", ts: now.Unix() - 299, now: now.Add(999 * time.Millisecond), tol: tol},
		{name: "sub-second clock, half a second out", ts: now.Unix() - 300, now: now.Add(500 * time.Millisecond), tol: tol, detail: "timestamp is 301s old, more than the 300s tolerance"},
		{name: "sub-second clock, future boundary", ts: now.Unix() + 300, now: now.Add(500 * time.Millisecond), tol: tol},
		{name: "sub-second tolerance", ts: now.Unix() - 2, now: now, tol: 1500 * time.Millisecond, detail: "timestamp is 2s old, more than the 1.5s tolerance"},
		{name: "epoch", ts: 0, now: now, tol: tol, detail: "timestamp is 1700000000s old, more than the 300s tolerance"},
		{name: "max int64", ts: math.MaxInt64, now: now, tol: tol, detail: "timestamp is 9223372035154775807s in the future, more than the 300s tolerance"},
		{name: "min int64", ts: math.MinInt64, now: now, tol: tol, detail: "timestamp is 9223372038554775808s old, more than the 300s tolerance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := checkTimestamp(tc.ts, tc.now, tc.tol)
			if tc.detail == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, &Rejection{Reason: ReasonTimestampOutOfTolerance, Detail: tc.detail}) {
				t.Fatalf("got %v, want %q", err, tc.detail)
			}
		})
	}
}

func TestDecoders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"00ff", true}, {"00FF", false}, {"0g00", false}, {"00f", false}, {"00ff00", false}, {"", false},
	} {
		if _, ok := decodeLowerHex(tc.in, 2); ok != tc.ok {
			t.Errorf("decodeLowerHex(%q) ok = %v", tc.in, ok)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"AAA=", true},  // two zero bytes
		{"AAE=", true},  // 0x00 0x01
		{"AAB=", false}, // non-zero trailing bits
		{"AAA", false},  // unpadded
		{"AA\nA", false},
		{"AA-=", false},
	} {
		if _, ok := decodeStdBase64(tc.in, 2); ok != tc.ok {
			t.Errorf("decodeStdBase64(%q) ok = %v", tc.in, ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1700000000", 1700000000, true}, {"0017", 17, true}, {"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", 0, false}, {"", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1e3", 0, false}, {"12345678901234567890", 0, false},
	} {
		got, ok := parseUnixSeconds(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseUnixSeconds(%q) = %d, %v", tc.in, got, ok)
		}
	}
}
