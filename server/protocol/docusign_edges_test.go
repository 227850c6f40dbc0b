package protocol

import (
	"strings"
	"testing"
)

// docusignEdgeID verifies body signed as Connect signs it and returns its identity.
func docusignEdgeID(t *testing.T, body string) string {
	t.Helper()
	p := DocuSign()
	return eventIDOf(t, p, keysFor(t, p, dsKey), dsReq(body, "X-DocuSign-Signature-1", dsSig(dsKey, body)), fixedNow)
}

// The identity needs all of event, data.envelopeId and generatedDateTime: without
// generatedDateTime, two messages for one envelope and event (say two recipients' or two
// sends' notifications) must not collapse into one, so the body hash is used.
func TestDocuSignIdentityWithoutGeneratedDateTimeIsTheBodyHash(t *testing.T) {
	t.Parallel()
	body := `{"event":"envelope-sent","data":{"envelopeId":"e1"}}`
	if got, want := docusignEdgeID(t, body), bodySHA256ID([]byte(body)); got != want {
		t.Fatalf("EventID = %q, want %q", got, want)
	}
}

// data.recipientId is appended as DocuSign writes it: a JSON SIM recipientId is a string
// ("1"), and a numeric one is rendered as written; an empty string adds nothing.
func TestDocuSignIdentityRecipientIDForms(t *testing.T) {
	t.Parallel()
	const base = `{"event":"recipient-completed","generatedDateTime":"t1","data":{"envelopeId":"e1"RID}}`
	for _, tc := range []struct {
		rid, want string
	}{
		{`,"recipientId":"2"`, "recipient-completed:e1:t1:2"},
		{`,"recipientId":2`, "recipient-completed:e1:t1:2"},
		{`,"recipientId":""`, "recipient-completed:e1:t1"},
	} {
		if got := docusignEdgeID(t, strings.Replace(base, "RID", tc.rid, 1)); got != tc.want {
			t.Fatalf("recipientId %s: EventID = %q, want %q", tc.rid, got, tc.want)
		}
	}
}
