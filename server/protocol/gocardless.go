package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// GoCardless signs the raw body with HMAC-SHA256 keyed with the webhook endpoint secret and
// sends the lowercase hex digest, bare, in Webhook-Signature. There is no timestamp. A webhook
// carries a batch of events ({"events":[{"id":"EV..."}, ...]}); a retry resends the same batch.
// Sources: gocardless/gocardless-pro-ruby lib/gocardless_pro/webhook.rb and spec/webhook_spec.rb;
// https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks
const (
	gocardlessName            = "gocardless"
	gocardlessSignatureHeader = "Webhook-Signature"
)

var (
	gocardlessMAC         = bodyMAC{header: gocardlessSignatureHeader, newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseGoCardlessSecret = sharedSecretParser("GoCardless webhook endpoint secret")
)

// GoCardless returns the protocol for GoCardless webhook endpoints.
//
// Verify rejects, in this order: no Webhook-Signature (missing signature); a value that is not
// 64 lowercase hex digits (malformed signature); no key matching (signature mismatch); a body
// that is not a JSON object (malformed payload); no non-empty "events" array whose every entry
// has a non-empty string "id" (missing event id).
func GoCardless() *Protocol {
	return &Protocol{
		Name:            gocardlessName,
		DisplayName:     "GoCardless",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, Webhook-Signature",
		SignsTimestamp:  false,
		IdentitySource:  `body JSON "events"[].id (EV...), joined with "," in delivery order (one webhook's batch of events); when that is over 256 bytes, "events-sha256:" + hex SHA-256 of the joined ids`,
		DocsURL:         "https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks",
		Retries: "A webhook answered with anything but 2xx (or not within the timeout) is retried with " +
			"the same body and signature, up to about 10 times at increasing intervals, and can be " +
			"retried by hand from the dashboard. No timestamp is signed, so there is no tolerance; " +
			"the event ids make retries duplicates.",
		ParseSecret:   parseGoCardlessSecret,
		Verify:        verifyGoCardless,
		Sign:          signGoCardless,
		ExampleSecret: sharedExample(""),
		ExampleBody:   gocardlessExampleBody,
	}
}

func verifyGoCardless(req *Request, keys []Key, _ Params) (Result, error) {
	keyID, err := gocardlessMAC.verify(req, keys)
	if err != nil {
		return Result{}, err
	}
	id, err := gocardlessEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// gocardlessEventID joins the ids of the webhook's events in order. Every event must have an
// id: a batch with an anonymous event has no stable identity.
func gocardlessEventID(body []byte) (string, error) {
	top, err := jsonObject(body)
	if err != nil {
		return "", err
	}
	raw, ok := top["events"]
	if !ok {
		return "", Reject(ReasonMissingEventID, `body has no "events" array`)
	}
	var events []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		return "", Reject(ReasonMissingEventID, `body field "events" is not an array of objects`)
	}
	if len(events) == 0 {
		return "", Reject(ReasonMissingEventID, `body field "events" is empty`)
	}
	ids := make([]string, 0, len(events))
	for i, ev := range events {
		var id string
		if err := json.Unmarshal(ev["id"], &id); err != nil || id == "" {
			return "", Reject(ReasonMissingEventID, `event %d has no non-empty string "id"`, i)
		}
		if strings.Contains(id, ",") {
			return "", Reject(ReasonMissingEventID, `event %d has an "id" containing a comma`, i)
		}
		ids = append(ids, id)
	}
	joined := strings.Join(ids, ",")
	if len(joined) > gocardlessMaxJoinedIDs {
		sum := sha256.Sum256([]byte(joined))
		return "events-sha256:" + hex.EncodeToString(sum[:]), nil
	}
	return joined, nil
}

// gocardlessMaxJoinedIDs bounds the readable form of the identity: a batch whose joined ids are
// longer (a webhook carries up to hundreds of events) is identified by their SHA-256 instead,
// keeping every identity well under the server's 512-byte limit.
const gocardlessMaxJoinedIDs = 256

// signGoCardless produces the Webhook-Signature GoCardless sends. An endpoint has one secret,
// so only secrets[0] signs.
func signGoCardless(in SignInput, secrets []string) (Headers, error) {
	return gocardlessMAC.signJSON(gocardlessName, parseGoCardlessSecret, in, secrets)
}

// gocardlessExampleBody is a one-event webhook as GoCardless sends it.
func gocardlessExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"events":[{"id":` + string(id) + `,"created_at":"2026-01-05T09:13:51.404Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM0001ABCD1234"},"details":{"origin":"gocardless","cause":"payment_confirmed","description":"Enough time has passed since the payment was submitted for the banks to return an error, so this payment is now confirmed."},"metadata":{}}]}`)
}
