package protocol

import (
	"crypto/sha256"
	"encoding/json"
)

// LaunchDarkly signs the raw body with HMAC-SHA256 keyed with the webhook's secret and sends the
// hex digest in X-LD-Signature; signing is optional per webhook, and an unsigned webhook cannot
// be verified here. There is no timestamp. Sources:
// https://launchdarkly.com/docs/home/infrastructure/webhooks ("Signing webhooks") and
// https://launchdarkly.com/docs/api/webhooks (the payload is an audit log entry with "_id").
const (
	launchdarklyName            = "launchdarkly"
	launchdarklySignatureHeader = "X-LD-Signature"
)

var (
	launchdarklyMAC         = bodyMAC{header: launchdarklySignatureHeader, prefix: "", newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseLaunchDarklySecret = sharedSecretParser("LaunchDarkly webhook secret")
)

// LaunchDarkly returns the protocol for LaunchDarkly webhooks.
//
// Verify rejects, in this order: no X-LD-Signature (missing signature); a value that is not 64
// lowercase hex digits (malformed signature); no key matching (signature mismatch); a body
// that is not a JSON object (malformed payload); no non-empty string "_id" (missing event id).
func LaunchDarkly() *Protocol {
	return &Protocol{
		Name:            launchdarklyName,
		DisplayName:     "LaunchDarkly",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-LD-Signature",
		IdentitySource:  "body JSON field \"_id\" (the audit log entry id; the payload is an audit log entry)",
		DocsURL:         "https://launchdarkly.com/docs/home/infrastructure/webhooks",
		Retries: "LaunchDarkly retries a delivery that gets a non-2xx response once; delivery is not " +
			"guaranteed and not in order. No timestamp is signed, so there is no tolerance; the audit " +
			"log entry id makes the retry a duplicate.",
		ParseSecret:   parseLaunchDarklySecret,
		Verify:        launchdarklyMAC.verifier(jsonBodyIdentity("_id")),
		Sign:          signLaunchDarkly,
		ExampleSecret: sharedExample(""),
		ExampleBody:   launchdarklyExampleBody,
	}
}

// signLaunchDarkly produces the headers LaunchDarkly sends. A webhook has one secret, so only secrets[0] signs.
func signLaunchDarkly(in SignInput, secrets []string) (Headers, error) {
	return launchdarklyMAC.signJSON(launchdarklyName, parseLaunchDarklySecret, in, secrets)
}

// launchdarklyExampleBody is an audit log entry as the webhooks API documents it.
func launchdarklyExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"_links":{"canonical":{"href":"/api/v2/projects/default/environments/production","type":"application/json"},"self":{"href":"/api/v2/auditlog/57c0a8e29969090743529965","type":"application/json"}},"_id":` + string(id) + `,"date":1767000000000,"accesses":[{"action":"updateOn","resource":"proj/default:env/production:flag/new-checkout"}],"kind":"flag","name":"New checkout","description":"- Turned on the flag","titleVerb":"turned on the flag"}`)
}
