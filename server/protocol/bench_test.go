package protocol

import (
	"strings"
	"testing"
	"time"
)

// benchBody is a Stripe-like event of about 2 KiB.
var benchBody = []byte(`{"id":"evt_bench_1","object":"event","type":"payment_intent.succeeded","data":{"object":{"description":"` +
	strings.Repeat("x", 2000) + `"}}}`)

// BenchmarkVerify measures each protocol's Verify on a ~2 KiB body, with the matching key
// first and, for rotation, second after a key that does not match.
func BenchmarkVerify(b *testing.B) {
	cases := []struct {
		p       *Protocol
		secret  string
		other   string
		eventID string
	}{
		{Stripe(), stripeSecret, stripeSecretNew, ""},
		{GitHub(), githubSecret, githubSecretNew, githubDelivery},
		{StandardWebhooks(), swSecret, swSecretNew, swID},
	}
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	for _, c := range cases {
		req := signed(b, c.p, SignInput{Body: benchBody, EventID: c.eventID, Timestamp: fixedNow}, c.secret)
		for _, kc := range []struct {
			name string
			keys []Key
		}{
			{"one key", keysFor(b, c.p, c.secret)},
			{"rotation", keysFor(b, c.p, c.other, c.secret)},
		} {
			b.Run(c.p.Name+"/"+kc.name, func(b *testing.B) {
				b.SetBytes(int64(len(benchBody)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.p.Verify(req, kc.keys, params); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkVerifyEvery measures Verify of every registered protocol on its example delivery
// (ExampleBody, signed by its own Sign with an example secret), so that a protocol whose
// verification is unusually slow or allocates a lot shows up beside the others.
func BenchmarkVerifyEvery(b *testing.B) {
	now := time.Unix(1_767_000_000, 0)
	params := Params{Now: now, Tolerance: 5 * time.Minute}
	for _, p := range Builtin() {
		b.Run(p.Name, func(b *testing.B) {
			signing, keys := exampleKeys(b, p)
			in := SignInput{Body: ExampleBody(p, "evt_bench_1"), EventID: "evt_bench_1", Timestamp: now, Method: "POST",
				URL: "https://hooks.example.com/in?x=1"}
			signed, err := SignDelivery(p, in, []string{signing})
			if err != nil {
				b.Fatal(err)
			}
			req := &Request{Method: in.Method, URL: signed.URL, Headers: signed.Headers, Body: signed.Body}
			b.SetBytes(int64(len(req.Body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Verify(req, keys, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
