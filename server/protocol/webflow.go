package protocol

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Webflow signs "{timestamp}:{body}" with HMAC-SHA256 keyed with the OAuth application's client
// secret (or the webhook's own secret for webhooks created through the API with one) and sends
// the hex digest in x-webflow-signature, the timestamp, in Unix milliseconds, in
// x-webflow-timestamp. Webhooks created from the dashboard or with a site API key are not
// signed and cannot be verified here. Sources: https://developers.webflow.com/data/docs/working-with-webhooks/verifying-webhook-signatures
// ("Verifying Requests": reject requests older than 5 minutes) and
// https://developers.webflow.com/data/changelog/webhook-signatures.
const (
	webflowName             = "webflow"
	webflowSignatureHeader  = "x-webflow-signature"
	webflowTimestampHeader  = "x-webflow-timestamp"
	webflowDefaultTolerance = 300 * time.Second
)

// Webflow returns the protocol for Webflow Data API webhooks.
//
// Verify rejects, in this order: no x-webflow-signature (missing signature); no
// x-webflow-timestamp (missing timestamp); a timestamp that is not decimal milliseconds or a
// signature that is not 64 lowercase hex digits (malformed signature); no key matching
// (signature mismatch); a timestamp more than the tolerance away from Now in either direction,
// compared to the millisecond (timestamp out of tolerance). The identity is the body's hash, with
// the signed timestamp added for the trigger types whose bodies repeat (webflowRepeatingBodies).
func Webflow() *Protocol {
	return &Protocol{
		Name:             webflowName,
		DisplayName:      "Webflow",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{x-webflow-timestamp}:{body}", timestamp in milliseconds`,
		SignsTimestamp:   true,
		DefaultTolerance: webflowDefaultTolerance,
		IdentitySource: `sha256 of the raw body ("body-sha256:<hex>"): Webflow sends no event id, and the timestamp is outside the body, ` +
			`so a retry of the same event has the same body; for ecomm_inventory_changed and collection_item_unpublished, whose ` +
			`bodies name only the object and its new state and so repeat byte for byte for distinct events, "body-sha256:<hex>@<x-webflow-timestamp>" ` +
			`(each send is its own event: a retry, signed afresh, is processed again rather than a later change lost)`,
		DocsURL: "https://developers.webflow.com/data/docs/working-with-webhooks/verifying-webhook-signatures",
		Retries: "Webflow retries a failed delivery, at most 3 attempts, 10 minutes apart " +
			"(https://developers.webflow.com/data/v1.0.0/docs/limits-and-retries and the 2022 changelog " +
			"\"Webflow will now make a maximum of 3 attempts\"). x-webflow-timestamp " +
			"is when the request was sent, and the docs tell receivers to reject anything older than 5 " +
			"minutes, so each attempt is signed afresh and the 300 s default covers transit and clock " +
			"skew only. A retry of ecomm_inventory_changed or collection_item_unpublished has a new " +
			"identity and is processed again (see IdentitySource); every other retry is a duplicate.",
		ParseSecret:   sharedSecretParser("Webflow client or webhook secret"),
		Verify:        verifyWebflow,
		Sign:          signWebflow,
		ExampleSecret: sharedExample(""),
		ExampleBody:   webflowExampleBody,
	}
}

func verifyWebflow(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	sigValue, ok := req.Headers.Get(webflowSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", webflowSignatureHeader)
	}
	tsValue, ok := req.Headers.Get(webflowTimestampHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", webflowTimestampHeader)
	}
	ms, ok := parseUnixSeconds(tsValue) // the same digit rules, in milliseconds
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not decimal Unix milliseconds", webflowTimestampHeader)
	}
	sig, ok := decodeLowerHex(sigValue, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "%s is not 64 lowercase hex digits", webflowSignatureHeader)
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, macMessage(req.Body, strconv.FormatInt(ms, 10), ":"))
	if !ok {
		return Result{}, rejectNoMatch(webflowSignatureHeader, 0, keys)
	}
	if err := checkTimestampMillisRoundedUp(ms, p.Now, effectiveTolerance(p, webflowDefaultTolerance)); err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: webflowEventID(req.Body, ms)}, nil
}

// webflowRepeatingBodies are the trigger types whose documented payloads carry no event time
// and no event id, only the object and its new state, so that distinct events send the same
// bytes: ecomm_inventory_changed is {"id","quantity","inventoryType"} (a sale and a restock
// bring a SKU back to a quantity it had), collection_item_unpublished is
// {"id","siteId","workspaceId","collectionId"} (an item unpublished, republished and
// unpublished again) (https://developers.webflow.com/data/reference/webhooks/events/ecomm-inventory-changed,
// .../collection-item-unpublished). By the body alone the later event would be a DUPLICATE for
// the whole dedupe window, and the consumer left with the earlier state.
var webflowRepeatingBodies = map[string]bool{
	"ecomm_inventory_changed":     true,
	"collection_item_unpublished": true,
}

// webflowEventID is the body's hash, and for a trigger type in webflowRepeatingBodies the
// body's hash "@" the signed x-webflow-timestamp: two events are two sends, at two times, and a
// replay of one signed request keeps its timestamp, so it stays a duplicate. Webflow's own
// retries are signed afresh and so count as new sends; that repeats work, which is better than
// losing an event.
func webflowEventID(body []byte, ms int64) string {
	id := bodySHA256ID(body)
	if trigger, err := jsonBodyString(body, "triggerType"); err == nil && webflowRepeatingBodies[trigger] {
		return id + "@" + strconv.FormatInt(ms, 10)
	}
	return id
}

// signWebflow produces the headers Webflow sends. An application has one client secret, so
// only secrets[0] signs.
func signWebflow(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webflow: sign needs a secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.UnixMilli() < 0 {
		return nil, errors.New("webflow: sign needs a timestamp at or after 1970")
	}
	key, err := sharedSecretParser("Webflow client or webhook secret")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("webflow: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.UnixMilli(), 10)
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: webflowTimestampHeader, Value: ts},
		{Name: webflowSignatureHeader, Value: digestHex.encode(hmacSum(sha256.New, key, macMessage(in.Body, ts, ":")))},
	}, nil
}

// webflowExampleBody is a form_submission event; the event id goes in the submission id.
func webflowExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"triggerType":"form_submission","payload":{"name":"Contact Us","siteId":"65427cf400e02b306eaa049c","data":{"First Name":"Zaphod","Email":"zaphod@heartofgold.ai"},"submittedAt":"2026-01-05T21:08:38.000Z","id":` + string(id) + `,"formId":"65429eadebe8a9f3a30f62d0"}}`)
}
