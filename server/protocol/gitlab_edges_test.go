package protocol

import (
	"testing"
	"time"
)

// A signed GitLab delivery is checked against the endpoint's tolerance, not the 5-minute
// default: a wider tolerance admits an older signature, a narrower one refuses it.
func TestGitLabSignedUsesEndpointTolerance(t *testing.T) {
	t.Parallel()
	p := GitLab()
	keys := keysFor(t, p, gitlabSigning)
	for _, tc := range []struct {
		name       string
		age, tol   time.Duration
		wantReason Reason
	}{
		{name: "10 min old, 15 min tolerance", age: 10 * time.Minute, tol: 15 * time.Minute},
		{name: "10 min ahead, 15 min tolerance", age: -10 * time.Minute, tol: 15 * time.Minute},
		{name: "2 min old, 1 min tolerance", age: 2 * time.Minute, tol: time.Minute, wantReason: ReasonTimestampOutOfTolerance},
		{name: "2 min ahead, 1 min tolerance", age: -2 * time.Minute, tol: time.Minute, wantReason: ReasonTimestampOutOfTolerance},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := gitlabSignedRequest(gitlabVecID, gitlabVecNow.Unix(), gitlabVecSig, gitlabVecBody)
			res, err := p.Verify(req, keys, Params{Now: gitlabVecNow.Add(tc.age), Tolerance: tc.tol})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
		})
	}
}

// A signing token entered without the whsec_ prefix is tried as base64 with or without its
// '=' padding: an unpadded copy of a padded token still verifies the webhook-signature.
func TestGitLabUnprefixedUnpaddedSigningTokenVerifies(t *testing.T) {
	t.Parallel()
	const signing = "whsec_AAECAwQFBgcICQoLDA0ODw==" // 16 bytes, padded
	p := GitLab()
	now := time.Unix(1767225600, 0)
	req := gitlabSignedBy(t, signing, now, `{"object_kind":"push"}`)
	for _, secret := range []string{"AAECAwQFBgcICQoLDA0ODw==", "AAECAwQFBgcICQoLDA0ODw"} {
		res, err := p.Verify(req, keysFor(t, p, secret), Params{Now: now})
		checkOutcome(t, res, err, 0, "k0", req)
		if res.EventID != gitlabUUID {
			t.Fatalf("%s: EventID = %q, want %q", secret, res.EventID, gitlabUUID)
		}
	}
}
