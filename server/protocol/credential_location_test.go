package protocol

import (
	"testing"
	"time"
)

// TestCredentialLocationIsWhereVerifyFindsTheSecret: for every protocol, under its default
// options and under options that move the credential, CredentialLocation names the header and
// query parameter that Verify reports as carrying the secret, and a protocol whose Verify
// reports none has no CredentialLocation. The server redacts deliveries stored before redaction
// at claim by CredentialLocation alone, so the two must agree.
func TestCredentialLocationIsWhereVerifyFindsTheSecret(t *testing.T) {
	now := time.Unix(1_767_000_000, 0)
	moved := map[string]map[string]string{
		"okta":         {oktaHeaderOption: "X-Okta-Auth"},
		"shared-token": {sharedTokenOptHeader: "X-Hook-Token"},
		"mailchimp":    {"query_param": "hook_key"},
	}
	for _, p := range Builtin() {
		optionSets := []map[string]string{nil}
		if m, ok := moved[p.Name]; ok {
			optionSets = append(optionSets, m)
		}
		for _, options := range optionSets {
			signing, keys := exampleKeys(t, p)
			in := SignInput{Body: ExampleBody(p, "evt_loc_1"), EventID: "evt_loc_1", Timestamp: now, Method: "POST",
				URL: "https://hooks.example.com/in?x=1", Options: options}
			signed, err := SignDelivery(p, in, []string{signing})
			if err != nil {
				t.Fatalf("%s %v: sign: %v", p.Name, options, err)
			}
			req := &Request{Method: in.Method, URL: signed.URL, Headers: signed.Headers, Body: signed.Body}
			res, err := p.Verify(req, keys, Params{Now: now, Tolerance: 5 * time.Minute, Options: options})
			if err != nil {
				t.Fatalf("%s %v: verify: %v", p.Name, options, err)
			}
			var header, param string
			if p.CredentialLocation != nil {
				header, param = p.CredentialLocation(options)
			}
			if header != res.CredentialHeader || param != res.CredentialParam {
				t.Errorf("%s %v: CredentialLocation = %q, %q; Verify found the credential in %q, %q",
					p.Name, options, header, param, res.CredentialHeader, res.CredentialParam)
			}
		}
	}
}
