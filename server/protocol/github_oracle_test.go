package protocol

import (
	"bytes"
	"crypto/sha256"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-github/v74/github"
)

// TestGitHubOracle cross-checks with go-github: it verifies our signatures, including over a
// form-encoded body, and agrees with us on rejections. go-github has no signer, so the other
// direction is covered by GitHub's published vector.
func TestGitHubOracle(t *testing.T) {
	t.Parallel()
	p := GitHub()
	form := "payload=" + url.QueryEscape(githubBody)
	for _, tc := range []struct {
		name        string
		contentType string
		body        string
	}{
		{"json", "application/json", githubBody},
		{"form-encoded", "application/x-www-form-urlencoded", form},
		{"binary", "application/json", "\x00\xff" + githubBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := signed(t, p, SignInput{Body: []byte(tc.body), EventID: githubDelivery}, githubSecret)
			for _, name := range []string{"X-Hub-Signature-256", "X-Hub-Signature"} {
				if err := github.ValidateSignature(header(req, name), req.Body, []byte(githubSecret)); err != nil {
					t.Fatalf("go-github rejects our %s: %v", name, err)
				}
				if err := github.ValidateSignature(header(req, name), append([]byte(tc.body), ' '), []byte(githubSecret)); err == nil {
					t.Fatalf("go-github accepts our %s over a tampered body", name)
				}
			}
			res, err := p.Verify(req, keysFor(t, p, githubSecret), Params{})
			checkOutcome(t, res, err, 0, "k0", req)
			if res.EventID != githubDelivery {
				t.Fatalf("EventID = %q", res.EventID)
			}
			if tc.contentType == "application/x-www-form-urlencoded" {
				// go-github verifies the raw form bytes and then hands back the decoded
				// payload; so do we (minus the decoding): the HMAC is over what was sent.
				payload, err := github.ValidatePayloadFromBody(tc.contentType, bytes.NewReader(req.Body), header(req, "X-Hub-Signature-256"), []byte(githubSecret))
				if err != nil {
					t.Fatalf("go-github: %v", err)
				}
				if string(payload) != githubBody {
					t.Fatalf("go-github payload = %q", payload)
				}
				decoded := withBody(req, []byte(githubBody))
				res, err := p.Verify(decoded, keysFor(t, p, githubSecret), Params{})
				checkOutcome(t, res, err, ReasonSignatureMismatch, "", decoded)
			}
		})
	}
	t.Run("agreement on rejections", func(t *testing.T) {
		t.Parallel()
		good := "sha256=" + githubMAC(sha256.New, githubSecret, githubBody)
		for _, sig := range []string{"", "sha256", "sha256=", "md5=abcd", "sha256=zz", good + "00", "sha256=" + strings.Repeat("0", 64)} {
			if github.ValidateSignature(sig, []byte(githubBody), []byte(githubSecret)) == nil {
				t.Errorf("go-github accepts %q", sig)
			}
			req := githubRequest(githubBody, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", githubDelivery)
			if _, err := p.Verify(req, keysFor(t, p, githubSecret), Params{}); err == nil {
				t.Errorf("we accept %q", sig)
			}
		}
	})
}
