package protocol

import (
	"crypto/sha1"
	"encoding/json"
)

// Segment's Webhooks and Webhooks (Actions) destinations sign the JSON payload with HMAC-SHA1
// keyed with the destination's shared secret and send the hex digest in X-Signature. There is
// no timestamp. Sources: https://www.twilio.com/docs/segment/connections/destinations/catalog/actions-webhook
// (Getting started, step 5) and, for batching, Twilio support article 51193799782171 ("How
// Segment computes x-signature for batched webhooks": only the first event is signed).
const (
	segmentName            = "segment"
	segmentSignatureHeader = "X-Signature"
)

var (
	segmentMAC         = bodyMAC{header: segmentSignatureHeader, prefix: "", newHash: sha1.New, size: sha1.Size, encoding: digestHex}
	parseSegmentSecret = sharedSecretParser("Segment webhook shared secret")
)

// Segment returns the protocol for Segment webhooks.
//
// Verify rejects, in this order: no X-Signature (missing signature); a value that is not 40
// lowercase hex digits (malformed signature); no key matching (signature mismatch: this
// includes batched requests, whose signature covers only their first event); a body that is not
// a JSON object (malformed payload); no non-empty string "messageId" (missing event id).
func Segment() *Protocol {
	return &Protocol{
		Name:            segmentName,
		DisplayName:     "Segment",
		SignatureScheme: "HMAC-SHA1 (hex) of the raw body, X-Signature",
		IdentitySource:  "body JSON field \"messageId\" (set by the Segment library for every message, stable across retries)",
		DocsURL:         "https://www.twilio.com/docs/segment/connections/destinations/catalog/actions-webhook",
		Retries: "Segment retries deliveries that fail (the schedule is not documented in the sources " +
			"read); a retry carries the same payload, and no timestamp is signed, so there is no " +
			"tolerance. The messageId makes retries duplicates. Batched Webhooks (Actions) requests " +
			"are signed over the first event only, as Segment support confirms, so they cannot be " +
			"verified here: disable batching.",
		ParseSecret:   parseSegmentSecret,
		Verify:        segmentMAC.verifier(jsonBodyIdentity("messageId")),
		Sign:          signSegment,
		ExampleSecret: sharedExample(""),
		ExampleBody:   segmentExampleBody,
	}
}

// signSegment produces the headers Segment sends. A destination has one shared secret, so only secrets[0] signs.
func signSegment(in SignInput, secrets []string) (Headers, error) {
	return segmentMAC.signJSON(segmentName, parseSegmentSecret, in, secrets)
}

// segmentExampleBody is a track call as the Webhooks destination forwards it.
func segmentExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"anonymousId":"507f191e810c19729de860ea","context":{"library":{"name":"analytics.js","version":"2.11.1"}},"event":"Order Completed","messageId":` + string(id) + `,"properties":{"order_id":"50314b8e9bcf000000000000","total":27.5},"receivedAt":"2026-01-05T21:08:38.123Z","sentAt":"2026-01-05T21:08:38.000Z","timestamp":"2026-01-05T21:08:37.950Z","type":"track","userId":"97980cfea0067","version":2}`)
}
