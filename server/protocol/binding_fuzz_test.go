package protocol

import (
	"bytes"
	"testing"
	"time"
)

// FuzzEveryProtocolBinding: the per-protocol targets change a signature header of a delivery
// they signed, and FuzzEveryProtocolVerify signs fuzzed deliveries; none changes what the
// signature covers after signing. Here, for every protocol that signs the request (not a
// static credential), a delivery signed afresh then gets one byte of its body, or of its URL
// for a protocol that signs the URL, changed. Properties:
//   - the changed delivery is never accepted with an event identity other than the signed
//     delivery's (or, for a protocol whose every delivery is new, accepted at all): otherwise
//     anyone holding one delivery could make another that is stored and run as a new event;
//   - a handshake is never the answer to a changed delivery whose original was not one.
func FuzzEveryProtocolBinding(f *testing.F) {
	protocols := newFuzzProtocols(f)
	for i, fp := range protocols {
		f.Add(uint8(i), ExampleBody(fp.p, "evt_seed_1"), "evt_seed_1", uint16(3), byte('x'), false)
		f.Add(uint8(i), ExampleBody(fp.p, "evt_seed_1"), "evt_seed_1", uint16(30), byte('%'), true)
	}
	f.Add(uint8(24), []byte("a=%41&b=2"), "e", uint16(3), byte('A'), false)
	f.Fuzz(func(t *testing.T, which uint8, body []byte, eventID string, pos uint16, repl byte, inURL bool) {
		fp := protocols[int(which)%len(protocols)]
		p := fp.p
		if p.StaticCredential {
			return // the body is not authenticated (documented)
		}
		params := Params{Now: fixedNow, Tolerance: 5 * time.Minute}
		in := SignInput{Body: body, EventID: eventID, Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in?a=1&b=%41"}
		d, err := SignDelivery(p, in, []string{fp.signing})
		if err != nil {
			return
		}
		req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
		orig, err := p.Verify(cloneRequest(req), fp.keys, params)
		if err != nil || orig.Handshake != nil {
			return // only an accepted delivery is worth changing
		}
		changed := cloneRequest(req)
		if inURL {
			if !p.NeedsURL || len(changed.URL) == 0 {
				return
			}
			u := []byte(changed.URL)
			i := int(pos) % len(u)
			if u[i] == repl {
				return
			}
			u[i] = repl
			changed.URL = string(u)
		} else {
			if len(changed.Body) == 0 {
				return
			}
			i := int(pos) % len(changed.Body)
			if changed.Body[i] == repl {
				return
			}
			changed.Body[i] = repl
		}
		res, err := p.Verify(changed, fp.keys, params)
		if err != nil {
			return
		}
		what := "body " + string(changed.Body)
		if inURL {
			what = "URL " + changed.URL
		}
		switch {
		case res.Handshake != nil:
			t.Fatalf("%s: a delivery accepted as %q, changed (%s), answered as a handshake", p.Name, orig.EventID, what)
		case p.EveryDeliveryNew:
			t.Fatalf("%s: a delivery accepted as %q, changed (%s), accepted again as %q", p.Name, orig.EventID, what, res.EventID)
		case res.EventID != orig.EventID:
			t.Fatalf("%s: a delivery accepted as %q, changed (%s), accepted as another event %q (original body %q, URL %q)",
				p.Name, orig.EventID, what, res.EventID, d.Body, d.URL)
		case !bytes.Equal(changed.Body, d.Body) && !inURL:
			// Same identity, other bytes: a duplicate at worst, merged by the claim.
		}
	})
}

// FuzzEveryProtocolWrongKey: accepted only with the right key. For every protocol, a delivery
// signed afresh (fuzzed body, event id, URL) with one example secret is verified against the
// keys of another: it is never accepted, whatever the body. (A handshake may still be
// answered: some are unauthenticated by the provider's design, and FuzzEveryProtocolVerify
// holds their shape.)
func FuzzEveryProtocolWrongKey(f *testing.F) {
	protocols := newFuzzProtocols(f)
	others := newFuzzProtocols(f) // the same protocols, each with other secrets
	for i, fp := range protocols {
		f.Add(uint8(i), ExampleBody(fp.p, "evt_seed_1"), "evt_seed_1", "https://hooks.example.com/in?x=1")
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte, eventID, rawURL string) {
		n := int(which) % len(protocols)
		fp, other := protocols[n], others[n]
		if fp.signing == other.signing {
			t.Fatalf("%s: two example secrets are the same", fp.p.Name)
		}
		in := SignInput{Body: body, EventID: eventID, Timestamp: fixedNow, Method: "POST", URL: rawURL}
		d, err := SignDelivery(fp.p, in, []string{fp.signing})
		if err != nil {
			return
		}
		req := &Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}
		res, err := fp.p.Verify(req, other.keys, Params{Now: fixedNow, Tolerance: 5 * time.Minute})
		if err == nil && res.Handshake == nil {
			t.Fatalf("%s: a delivery signed with one secret accepted under another's keys as %q (key %q)", fp.p.Name, res.EventID, res.KeyID)
		}
	})
}
