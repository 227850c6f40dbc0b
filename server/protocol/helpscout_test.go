package protocol

import (
	"testing"
	"time"
)

// The vector is the webhook example of helpscout/helpscout-api-php (body json_encode(['id' => 123]), secret "asdfasdf", signature 7S2+kN8bZsrdAEADJ+yYfWWsf/4=), recomputed independently with openssl.
const (
	helpscoutSecret     = "hs-secret-key-one-0123456789"
	helpscoutSecret2    = "hs-secret-key-two-0123456789"
	helpscoutVectorKey  = "asdfasdf"
	helpscoutVectorBody = `{"id":123}`
	helpscoutVectorSig  = "7S2+kN8bZsrdAEADJ+yYfWWsf/4="
)

func TestHelpScoutVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: HelpScout(), secret: helpscoutSecret, secret2: helpscoutSecret2,
		sigHeader: "X-HelpScout-Signature", eventID: "thread-1", wantEventIDFor: bodySHA256ID,
		malformed:  []string{"", "zz", helpscoutVectorSig[1:], helpscoutVectorSig + "00", "sha256=" + helpscoutVectorSig},
		noIdentity: nil,
	}.run(t)
}

func TestHelpScoutVector(t *testing.T) {
	t.Parallel()
	p := HelpScout()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-HelpScout-Signature", Value: helpscoutVectorSig}}, Body: []byte(helpscoutVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, helpscoutVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(helpscoutVectorBody)) {
		t.Fatalf("EventID = %q", res.EventID)
	}
	res, err = p.Verify(req, keysFor(t, p, helpscoutSecret), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(helpscoutVectorBody), EventID: "evt_vector"}, []string{helpscoutVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-HelpScout-Signature"); got != helpscoutVectorSig {
		t.Fatalf("Sign = %q, want %q", got, helpscoutVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret-x ")
}

func FuzzHelpScoutSignatureHeader(f *testing.F) {
	f.Add(helpscoutVectorSig, []byte(helpscoutVectorBody), uint16(3), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, HelpScout(), helpscoutVectorKey, "X-HelpScout-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}

// Help Scout sends the same conversation object for convo.status, convo.assigned and the other
// conversation events; only X-HelpScout-Event tells them apart. Two events about one change
// must not share an identity, and a retry of either must keep its own.
func TestHelpScoutEventsWithOneBodyAreDistinct(t *testing.T) {
	t.Parallel()
	p := HelpScout()
	body := helpscoutExampleBody("thread-1")
	req := signed(t, p, SignInput{Body: body}, helpscoutSecret)
	keys := keysFor(t, p, helpscoutSecret)
	idFor := func(event string) string {
		return eventIDOf(t, p, keys, withHeader(req, "X-HelpScout-Event", event), time.Time{})
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
