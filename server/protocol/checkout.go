package protocol

import (
	"crypto/sha256"
	"encoding/json"
)

// Checkout.com signs the raw body with HMAC-SHA256 keyed with the signature key configured in
// the workflow's webhook action and sends the hex digest in Cko-Signature. There is no
// timestamp. Source: https://www.checkout.com/docs/workflows ("Receive webhooks") and
// https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver
const (
	checkoutName            = "checkout"
	checkoutSignatureHeader = "Cko-Signature"
)

var (
	checkoutMAC         = bodyMAC{header: checkoutSignatureHeader, newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseCheckoutSecret = sharedSecretParser("Checkout.com webhook signature key")
)

// Checkout returns the protocol for Checkout.com workflow webhooks.
//
// Verify rejects, in this order: no Cko-Signature (missing signature); a value that is not 64
// lowercase hex digits (malformed signature); no key matching (signature mismatch); a body
// that is not a JSON object (malformed payload); no non-empty string "id" (missing event id).
// The optional Authorization header a workflow can add is a static credential and is not
// checked: the HMAC already authenticates the body.
func Checkout() *Protocol {
	return &Protocol{
		Name:            checkoutName,
		DisplayName:     "Checkout.com",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, Cko-Signature",
		IdentitySource:  `body JSON field "id" (evt_...)`,
		DocsURL:         "https://www.checkout.com/docs/workflows",
		Retries: "A failed delivery is resent up to eight times, 5 min, 10 min, 15 min, 30 min, 1 h, " +
			"4 h, 12 h and 12 h after the previous attempt, and can be resent from the Dashboard or " +
			"API; delivery is at least once. No timestamp is signed, so there is no tolerance; the " +
			"event id makes retries duplicates.",
		ParseSecret:   parseCheckoutSecret,
		Verify:        checkoutMAC.verifier(jsonBodyIdentity("id")),
		Sign:          signCheckout,
		ExampleSecret: sharedExample(""),
		ExampleBody:   checkoutExampleBody,
	}
}

// signCheckout produces the Cko-Signature header. A webhook action has one signature key, so
// only secrets[0] signs.
func signCheckout(in SignInput, secrets []string) (Headers, error) {
	return checkoutMAC.signJSON(checkoutName, parseCheckoutSecret, in, secrets)
}

// checkoutExampleBody is a payment_approved notification.
func checkoutExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"id":` + string(id) + `,"type":"payment_approved","version":"1.0.33","created_on":"2026-01-05T21:08:38.000Z","data":{"id":"pay_mbabizu24mvu3mela5njyhpit4","action_id":"act_y3oqhf46pyzuxjbcn2giaqnb44","amount":6540,"currency":"USD","approved":true,"status":"Authorized","response_code":"10000"},"_links":{"self":{"href":"https://api.checkout.com/workflows/events/evt_az5sblvku4ge3dwpztvyizgcau"}}}`)
}
