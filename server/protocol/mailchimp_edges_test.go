package protocol

import (
	"strings"
	"testing"
)

// TestMailchimpHeadIsAnsweredLikeGet: Mailchimp validates the URL with a GET when the webhook is
// saved; a HEAD is answered the same way, with 200 and nothing stored.
func TestMailchimpHeadIsAnsweredLikeGet(t *testing.T) {
	t.Parallel()
	p := Mailchimp()
	for _, m := range []string{"HEAD", "head", "GET"} {
		res, err := p.Verify(&Request{Method: m, URL: "https://hooks.example.com/mc"}, nil, Params{})
		if err != nil || res.Handshake == nil || res.Handshake.Status != 200 || res.EventID != "" {
			t.Fatalf("%s = %+v, %v", m, res, err)
		}
	}
}

// TestMailchimpSecretAtLeastSixteen: the URL secret must be at least 16 characters.
func TestMailchimpSecretAtLeastSixteen(t *testing.T) {
	t.Parallel()
	p := Mailchimp()
	if _, err := p.ParseSecret(strings.Repeat("a", 16)); err != nil {
		t.Fatalf("16 characters refused: %v", err)
	}
	if _, err := p.ParseSecret(strings.Repeat("a", 15)); err == nil {
		t.Fatal("15 characters accepted")
	}
}
