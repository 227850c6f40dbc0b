package protocol

import (
	"strings"
	"testing"
	"time"
)

// TestGitLabSignatureFailsTokenDecides: on an endpoint not requiring signatures, a delivery
// whose webhook-signature fails, for whatever reason, and that carries X-Gitlab-Token gets
// exactly the answer the same delivery gets without the signature header: accepted under the
// token's secret, its Idempotency-Key (else X-Gitlab-Event-UUID) and the token redacted, or
// rejected for what the token path lacks. A token that matched a secret on a delivery with no
// event id was reported as the signature's failure (signature mismatch, which the server turns
// into UNAVAILABLE when one of the endpoint's secrets cannot be opened): the delivery is
// authenticated, and what keeps it out is the missing id, for good.
func TestGitLabSignatureFailsTokenDecides(t *testing.T) {
	t.Parallel()
	p := GitLab()
	keys := keysFor(t, p, gitlabSigning, gitlabToken)
	params := Params{Now: gitlabVecNow, Tolerance: 300 * time.Second}
	vec := gitlabSignedRequest(gitlabVecID, gitlabVecNow.Unix(), gitlabVecSig, gitlabVecBody)
	broken := "v1," + strings.Repeat("A", 43) + "="
	failures := map[string]*Request{
		"mismatch":           withHeader(vec, "webhook-signature", broken),
		"malformed":          withHeader(vec, "webhook-signature", "v1,!!"),
		"empty signature":    withHeader(vec, "webhook-signature", ""),
		"only v1a":           withHeader(vec, "webhook-signature", "v1a,abc"),
		"no timestamp":       withoutHeader(vec, "webhook-timestamp"),
		"no webhook-id":      withoutHeader(vec, "webhook-id"),
		"body tampered":      withBody(vec, []byte(gitlabVecBody+" ")),
		"stale":              vec,
		"wrong signing key":  withHeader(vec, "webhook-signature", signedHeader(t, p, SignInput{Body: []byte(gitlabVecBody), EventID: gitlabVecID, Timestamp: gitlabVecNow}, gitlabSigningNew, "webhook-signature")),
		"stale and mismatch": withHeader(vec, "webhook-signature", broken),
	}
	stale := map[string]bool{"stale": true, "stale and mismatch": true}
	tokens := map[string]func(*Request) *Request{
		"valid token": func(r *Request) *Request { return withHeader(r, "X-Gitlab-Token", gitlabToken) },
		"valid token, no id": func(r *Request) *Request {
			return withoutHeader(withHeader(r, "X-Gitlab-Token", gitlabToken), "Idempotency-Key")
		},
		"valid token, event uuid": func(r *Request) *Request {
			return withHeader(withoutHeader(withHeader(r, "X-Gitlab-Token", gitlabToken), "Idempotency-Key"), "X-Gitlab-Event-UUID", gitlabUUID)
		},
		"empty token":              func(r *Request) *Request { return withHeader(r, "X-Gitlab-Token", "") },
		"wrong token":              func(r *Request) *Request { return withHeader(r, "X-Gitlab-Token", "not-the-token") },
		"signing token as a token": func(r *Request) *Request { return withHeader(r, "X-Gitlab-Token", gitlabSigning) },
	}
	for fname, failing := range failures {
		for tname, withToken := range tokens {
			req := withToken(failing)
			pp := params
			if stale[fname] {
				pp.Now = gitlabVecNow.Add(301 * time.Second)
			}
			sigErr := func() error { _, err := p.Verify(withoutHeader(req, "X-Gitlab-Token"), keys, pp); return err }()
			if sigErr == nil {
				t.Fatalf("%s: the signature alone authenticates", fname)
			}
			want, wantErr := p.Verify(withoutHeader(req, "webhook-signature"), keys, pp)
			got, err := p.Verify(req, keys, pp)
			checkAnswer(t, err)
			switch {
			case wantErr == nil && (err != nil || got != want):
				t.Errorf("%s, %s: got %+v, %v; want %+v as without the signature header", fname, tname, got, err, want)
			case wantErr == nil && got.CredentialHeader != "X-Gitlab-Token":
				t.Errorf("%s, %s: the token is not redacted: %+v", fname, tname, got)
			case wantErr != nil && err == nil:
				t.Errorf("%s, %s: accepted (%+v), the token alone is rejected: %v", fname, tname, got, wantErr)
			case wantErr != nil && ReasonOf(wantErr) == ReasonMissingEventID && ReasonOf(err) != ReasonMissingEventID:
				// The token authenticated it: the missing id is what keeps it out.
				t.Errorf("%s, %s: reason %v (%v), want missing event id as without the signature header", fname, tname, ReasonOf(err), err)
			case wantErr != nil && ReasonOf(wantErr) != ReasonMissingEventID && ReasonOf(err) != ReasonOf(sigErr):
				// A token that authenticates nothing leaves the signature's reason.
				t.Errorf("%s, %s: reason %v, want the signature's %v", fname, tname, ReasonOf(err), ReasonOf(sigErr))
			}
			// Where signatures are required the token never decides.
			required := pp
			required.Options = map[string]string{"require_signature": "true"}
			if _, err := p.Verify(req, keys, required); ReasonOf(err) != ReasonOf(sigErr) {
				t.Errorf("%s, %s, require_signature: %v, want the signature's %v", fname, tname, err, sigErr)
			}
		}
	}
}
