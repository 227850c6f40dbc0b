package protocol

import "testing"

// Bitbucket (Cloud and Data Center) sends its signature only in X-Hub-Signature ("x-hub-signature:
// sha256=...", Atlassian's Data Center event-payload docs, providers.md §28). The GitHub-style
// X-Hub-Signature-256 is not a Bitbucket header: a delivery carrying only that one is unsigned
// as far as Bitbucket's protocol goes, whatever its value.
func TestBitbucketReadsOnlyXHubSignature(t *testing.T) {
	t.Parallel()
	p := Bitbucket()
	good := signed(t, p, SignInput{Body: []byte(bitbucketBody), EventID: bitbucketUUID}, bitbucketSecret)
	moved := withHeader(withoutHeader(good, "X-Hub-Signature"), "X-Hub-Signature-256", header(good, "X-Hub-Signature"))
	runVerifyCases(t, p, []verifyCase{
		{name: "signature in X-Hub-Signature", req: good, keys: []string{bitbucketSecret}, wantKey: "k0", wantEvent: bitbucketUUID},
		{name: "same signature only in X-Hub-Signature-256", req: moved, keys: []string{bitbucketSecret}, wantReason: ReasonMissingSignature},
	})
}
