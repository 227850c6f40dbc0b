package protocol

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Mux signs "{t}.{body}" with HMAC-SHA256 keyed with the webhook signing secret and sends
// Mux-Signature: t=<unix>,v1=<hex>. Sources: muxinc/mux-node-sdk
// src/webhooks/resources/verify_header.ts (default tolerance 300 s, v1 the only scheme) and its
// tests; https://docs.mux.com/guides/listen-for-webhooks#verify-webhook-signatures
const (
	muxName             = "mux"
	muxSignatureHeader  = "Mux-Signature"
	muxDefaultTolerance = 300 * time.Second
)

// Mux returns the protocol for Mux Video and Data webhooks.
//
// Verify rejects, in this order: no Mux-Signature (missing signature); an empty header, an
// element that is not k=v, no t or a repeated t, t not decimal seconds (malformed signature);
// no v1 at all (missing signature); no v1 matching a key (malformed signature if a v1 was not 64
// lowercase hex digits, else signature mismatch); t more than the tolerance away from Now in
// either direction (timestamp out of tolerance); a body that is not a JSON object (malformed
// payload); no non-empty string "id" at the top level (missing event id).
func Mux() *Protocol {
	return &Protocol{
		Name:             muxName,
		DisplayName:      "Mux",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{t}.{body}", Mux-Signature t=,v1=`,
		SignsTimestamp:   true,
		DefaultTolerance: muxDefaultTolerance,
		IdentitySource:   `body JSON field "id" (the event's UUID)`,
		DocsURL:          "https://docs.mux.com/guides/listen-for-webhooks",
		Retries: "Mux retries a delivery that is not answered 2xx, with backoff (the exact schedule " +
			"is not documented in the sources read). The SDKs' 300 s window presumes each attempt is " +
			"signed when it is sent, with a fresh t, and the event body records the attempts so far, " +
			"so a retry cannot reuse an old signature; the tolerance only covers transit and clock " +
			"skew. The event id stays the same across attempts.",
		ParseSecret:   sharedSecretParser("Mux webhook signing secret"),
		Verify:        verifyMux,
		Sign:          signMux,
		ExampleSecret: sharedExample(""),
		ExampleBody:   muxExampleBody,
	}
}

func verifyMux(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(muxSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", muxSignatureHeader)
	}
	h, err := parseTVSignatures(muxSignatureHeader, raw, "v1", digestHex, sha256.Size, false)
	if err != nil {
		return Result{}, err
	}
	keyID, err := matchTVSignatures(muxSignatureHeader, h, keys, sha256.New, ".", req.Body, func(ts int64) error {
		return checkTimestamp(ts, p.Now, effectiveTolerance(p, muxDefaultTolerance))
	})
	if err != nil {
		return Result{}, err
	}
	id, err := jsonBodyString(req.Body, "id")
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// signMux produces the Mux-Signature header. A Mux webhook has one signing secret, so only
// secrets[0] signs.
func signMux(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("mux: sign needs a secret")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("mux: sign needs a timestamp at or after 1970")
	}
	key, err := sharedSecretParser("Mux webhook signing secret")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("mux: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	sig := digestHex.encode(hmacSum(sha256.New, key, macMessage(in.Body, ts, ".")))
	return Headers{
		{Name: "Content-Type", Value: "application/json"},
		{Name: muxSignatureHeader, Value: "t=" + ts + ",v1=" + sig},
	}, nil
}

// muxExampleBody is a video.asset.ready event in the shape of mux-node-sdk's BaseWebhookEvent.
func muxExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"type":"video.asset.ready","object":{"type":"asset","id":"a4nOgmxGWg6gULfcBbAa00gXyfcwPnAFldF8RdsNyk8M"},"id":` + string(id) + `,"environment":{"name":"Production","id":"j0863n"},"data":{"status":"ready","id":"a4nOgmxGWg6gULfcBbAa00gXyfcwPnAFldF8RdsNyk8M"},"created_at":"2026-01-05T21:08:38.000000Z","attempts":[],"accessor_source":null,"accessor":null,"request_id":null}`)
}
