package protocol

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestContentfulSignedDeliveryAsAClientSendsIt: `hookverify sign --url U` prints the headers
// of a delivery to U, which the user then sends with an HTTP client (curl, net/http) through
// an edge; the edge forwards scheme://host + the request target as received. A client never
// sends a URL's fragment, so a URL given with one ("https://hooks.example.com/hooks/ep#test")
// arrives without it: SignDelivery must sign (and give as Signed.URL) the URL the provider
// would call, which Verify then accepts, as it did before the request target was taken byte
// for byte (url.Parse cut the fragment on both sides).
func TestContentfulSignedDeliveryAsAClientSendsIt(t *testing.T) {
	t.Parallel()
	p := Contentful()
	keys := keysFor(t, p, cfSecret)
	var got *Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = &Request{Method: r.Method, URL: "https://hooks.example.com" + r.RequestURI, Body: body}
		for name, values := range r.Header {
			for _, v := range values {
				got.Headers = append(got.Headers, Header{Name: name, Value: v})
			}
		}
	}))
	defer srv.Close()
	now := time.UnixMilli(1603379941037)
	for _, u := range []string{
		"https://hooks.example.com/hooks/ep#test",
		"https://hooks.example.com/hooks/ep?x=1#frag?y=2",
	} {
		d, err := SignDelivery(p, SignInput{Body: []byte(cfBody), EventID: "evt_1", Timestamp: now, Method: "POST", URL: u}, []string{cfSecret})
		if err != nil {
			t.Fatalf("SignDelivery(%q): %v", u, err)
		}
		// What the delivery must still be: accepted as given by SignDelivery.
		if _, err := p.Verify(&Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}, keys, Params{Now: now}); err != nil {
			t.Errorf("Verify of SignDelivery(%q) as given (URL %q): %v", u, d.URL, err)
		}
		// Sent by net/http to the URL the user gave (the test server standing for the host).
		req, err := http.NewRequest("POST", srv.URL+u[len("https://hooks.example.com"):], bytes.NewReader(d.Body))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range d.Headers {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if _, err := p.Verify(got, keys, Params{Now: now}); err != nil {
			t.Errorf("sign --url %q, sent by an HTTP client (target %q): %v", u, got.URL, err)
		}
	}
}
