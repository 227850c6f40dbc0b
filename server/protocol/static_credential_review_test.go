package protocol

import (
	"strings"
	"testing"
)

// TestStaticCredentialIdentityIsNotTheCredential: with id_header naming the very header that
// carries the credential (Authorization for basic-auth and bearer-token, the token header for
// shared-token), the event identity would be the secret itself: stored in plain text as the
// claim's event id and returned to callers (README: secrets never in the DB or API responses),
// and the same for every delivery, so all but the first would be DUPLICATE. Such options must
// be refused when the endpoint is configured, and never yield the credential as an identity.
func TestStaticCredentialIdentityIsNotTheCredential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p       *Protocol
		secret  string
		options map[string]string
	}{
		{BasicAuth(), "hook:s3cr3t-pass", map[string]string{"id_header": "authorization"}},
		{BearerToken(), "tok_abcdef0123456789", map[string]string{"id_header": "Authorization"}},
		{SharedToken(), "shared-token-value-123", map[string]string{"id_header": "x-webhook-token"}},
		{SharedToken(), "shared-token-value-123", map[string]string{"header": "X-Gitlab-Token", "id_header": "X-GITLAB-TOKEN"}},
	} {
		t.Run(tc.p.Name+"/"+tc.options["id_header"], func(t *testing.T) {
			t.Parallel()
			if err := tc.p.ValidateOptions(tc.options); err == nil {
				t.Errorf("ValidateOptions(%v) accepted an identity header that carries the credential", tc.options)
			}
			// Sign with the options but without id_header, then verify with them: the request
			// carries the credential in the named header.
			signOpts := map[string]string{}
			for k, v := range tc.options {
				if k != "id_header" {
					signOpts[k] = v
				}
			}
			h, err := tc.p.Sign(SignInput{Body: []byte(`{"id":"evt_1"}`), Options: signOpts}, []string{tc.secret})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Method: "POST", URL: "https://hooks.example.com/in", Headers: h, Body: []byte(`{"id":"evt_1"}`)}
			res, err := tc.p.Verify(req, keysFor(t, tc.p, tc.secret), Params{Now: fixedNow, Options: tc.options})
			if err == nil && strings.Contains(res.EventID, tc.secret[len(tc.secret)-6:]) || err == nil && strings.Contains(res.EventID, "Basic ") {
				t.Fatalf("EventID %q is the credential", res.EventID)
			}
		})
	}
}
