package protocol

import "testing"

// Help Scout sends the same conversation object for convo.status, convo.assigned and the other
// conversation events; only X-HelpScout-Event tells them apart. Two events about one change
// must not share an identity, and a retry of either must keep its own.
func TestHelpScoutEventsWithOneBodyAreDistinct(t *testing.T) {
	t.Parallel()
	p := HelpScout()
	body := helpscoutExampleBody("thread-1")
	h, err := p.Sign(SignInput{Body: body}, []string{helpscoutSecret})
	if err != nil {
		t.Fatal(err)
	}
	keys := keysFor(t, p, helpscoutSecret)
	idFor := func(event string) string {
		t.Helper()
		hs := append(Headers{{Name: "X-HelpScout-Event", Value: event}}, h...)
		res, err := p.Verify(&Request{Method: "POST", Headers: hs, Body: body}, keys, Params{})
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		return res.EventID
	}
	status, assigned := idFor("convo.status"), idFor("convo.assigned")
	if status == assigned {
		t.Fatalf("convo.status and convo.assigned with one body share the identity %q", status)
	}
	if again := idFor("convo.status"); again != status {
		t.Fatalf("a retry of convo.status has identity %q, first %q", again, status)
	}
	if status != "convo.status:"+bodySHA256ID(body) {
		t.Fatalf("EventID = %q", status)
	}
}
