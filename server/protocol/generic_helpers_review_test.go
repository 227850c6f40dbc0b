package protocol

import "testing"

// TestGenericPointerTrailingData: a body that is one JSON value followed by anything but white
// space is not JSON (RFC 8259, json.Valid); the id_pointer identity must call it malformed
// rather than read the event id from its first value. The option-configured protocols share
// the lookup; generic-hmac (signed body) and bearer-token (unsigned body) show it.
func TestGenericPointerTrailingData(t *testing.T) {
	t.Parallel()
	opts := map[string]string{"id_pointer": "/id"}
	for _, body := range []string{`{"id":"a"}x`, `{"id":"a"}}`, `{"id":"a"}]`, `{"id":"a"} ,`} {
		for _, p := range []*Protocol{GenericHMAC(), BearerToken()} {
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			d, err := SignDelivery(p, SignInput{Body: []byte(body), Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in", Options: opts}, []string{signing})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
			res, err := p.Verify(req, keysFor(t, p, verifying), Params{Now: fixedNow, Options: p.DigestCredentialOptions(opts)})
			checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
		}
	}
	// White space after the value is still JSON.
	if v, found, err := genericPointerLookup([]byte("{\"id\":\"a\"} \r\n\t"), "/id"); err != nil || !found || v != "a" {
		t.Fatalf("trailing white space: %v, %v, %v", v, found, err)
	}
}
