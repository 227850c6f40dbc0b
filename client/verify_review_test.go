package client_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/client"
)

// TestBuildRequestURLOfAnInProcessRequest: a request made with http.NewRequest (a test of the
// edge, a program replaying a delivery through Conn.Verify) has no TLS state and no
// RequestURI; the URL it was made for is the one forwarded, scheme included. Forwarded as
// http, every delivery of a provider that signs the URL (Twilio, Square, HubSpot) fails.
func TestBuildRequestURLOfAnInProcessRequest(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"https://hooks.example.com/hooks/ep?b=2&a=%2F", "http://hooks.example.com:8080/hooks/ep"} {
		r, err := http.NewRequest("POST", u, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req, err := newConn(t).BuildRequest("ep", r)
		if err != nil {
			t.Fatal(err)
		}
		if req.GetUrl() != u {
			t.Errorf("forwarded URL %q, want %q", req.GetUrl(), u)
		}
	}
}

// TestDialRefusesAPublicURLBaseThatCannotBeOne: the forwarded URL is the base followed by the
// request URI, and URL-signing providers sign that URL byte for byte. A base that cannot be
// the front of the URL a provider called (no scheme, credentials, a query or fragment, white
// space) would fail every such delivery with a 4xx, which most providers never retry; Dial
// refuses it, as hookverify edge does its --public-url-base, without quoting credentials.
func TestDialRefusesAPublicURLBaseThatCannotBeOne(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"hooks.example.com", "//hooks.example.com", "https://", "https://u:hunter2@hooks.example.com",
		"https://hooks.example.com?x=1", "https://hooks.example.com/#f", "https://hooks.example.com /edge", "ftp://hooks.example.com"} {
		conn, err := client.Dial("127.0.0.1:1", client.WithPublicURLBase(base))
		if err == nil {
			conn.Close()
			t.Errorf("Dial accepted the public URL base %q", base)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error quotes credentials: %v", err)
		}
	}
	for _, base := range []string{"https://hooks.example.com", "https://hooks.example.com/", "http://10.0.0.1:8080/edge"} {
		conn, err := client.Dial("127.0.0.1:1", client.WithPublicURLBase(base))
		if err != nil {
			t.Errorf("Dial refused the public URL base %q: %v", base, err)
			continue
		}
		conn.Close()
	}
}
