package protocol

import (
	"reflect"
	"strings"
	"testing"
)

// lookAlikeName writes name with each s and k replaced by a character that Unicode's simple
// case folding (strings.EqualFold) takes for it: "ſ" (U+017F) and the Kelvin sign (U+212A).
var lookAlikeName = strings.NewReplacer("s", "\u017F", "S", "\u017F", "k", "\u212A", "K", "\u212A")

// TestHeaderNamesFoldOnlyASCII checks that every protocol reads a header only under its ASCII
// name, in any ASCII case: a header whose name imitates it with non-ASCII letters is no header
// the protocol knows. Each protocol's own delivery, with such names, must get the verdict of
// the same delivery without those headers at all.
func TestHeaderNamesFoldOnlyASCII(t *testing.T) {
	imitated := 0
	for _, p := range Builtin() {
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			t.Fatalf("%s: ExampleSecret: %v", p.Name, err)
		}
		keys := keysFor(t, p, verifying)
		in := SignInput{Body: ExampleBody(p, "evt_fold_1"), EventID: "evt_fold_1", Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in"}
		d, err := SignDelivery(p, in, []string{signing})
		if err != nil {
			t.Fatalf("%s: SignDelivery: %v", p.Name, err)
		}
		params := Params{Now: fixedNow, Tolerance: p.DefaultTolerance}
		lookAlike := &Request{Method: in.Method, URL: d.URL, Body: d.Body}
		without := &Request{Method: in.Method, URL: d.URL, Body: d.Body}
		renamed := 0
		for _, h := range d.Headers {
			if name := lookAlikeName.Replace(h.Name); name != h.Name {
				lookAlike.Headers = append(lookAlike.Headers, Header{Name: name, Value: h.Value})
				renamed++
				continue
			}
			lookAlike.Headers = append(lookAlike.Headers, h)
			without.Headers = append(without.Headers, h)
		}
		if renamed == 0 {
			continue
		}
		imitated++
		gotRes, gotErr := p.Verify(lookAlike, keys, params)
		wantRes, wantErr := p.Verify(without, keys, params)
		if ReasonOf(gotErr) != ReasonOf(wantErr) || (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(gotRes, wantRes) {
			t.Errorf("%s: with look-alike header names: %+v, %v; without those headers: %+v, %v", p.Name, gotRes, gotErr, wantRes, wantErr)
		}
	}
	if imitated < 20 {
		t.Fatalf("only %d protocols sign with a header named with s or k; the test lost its subject", imitated)
	}
}

func TestHeadersGetFoldsOnlyASCII(t *testing.T) {
	h := Headers{{Name: "X-Hub-\u017Fignature-256", Value: "forged"}, {Name: "x-hub-SIGNATURE-256", Value: "real"}}
	if v, ok := h.Get("X-Hub-Signature-256"); !ok || v != "real" {
		t.Errorf("Get = %q, %v; want the ASCII-named header's value", v, ok)
	}
	if got := h.Values("X-Hub-Signature-256"); !reflect.DeepEqual(got, []string{"real"}) {
		t.Errorf("Values = %q", got)
	}
}
