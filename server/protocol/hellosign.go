package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strconv"
)

// Dropbox Sign (formerly HelloSign) posts callbacks as a form whose field "json" holds the event,
// and authenticates them with event.event_hash = hex HMAC-SHA256, keyed with the account's API
// key (or the API app's), of event_time + event_type concatenated. Nothing else in the body is
// signed. The callback must be answered 200 with a body containing "Hello API Event Received",
// or Dropbox Sign counts it as failed and retries. Sources: the official SDKs' EventCallbackHelper
// (hellosign/dropbox-sign-php, -node, -python, ...) and their example with API key
// 324e3b08...065782, event_time 1669926463, account_confirmed, hash ff8b0343...74832f.
const (
	hellosignName = "hellosign"
	// hellosignBoundary is the multipart boundary SignBody uses.
	hellosignBoundary = "hookverify-hellosign-boundary"
	// hellosignMaxJSON bounds the json field read from a multipart body.
	hellosignMaxJSON = 1 << 20
)

// HelloSign returns the protocol for Dropbox Sign (HelloSign) account and API app callbacks.
//
// StaticCredential is set: the event hash authenticates only the event's time and type, so the
// rest of the body (which signature request, which metadata) is not authenticated, and a
// captured callback can be replayed with other content. Treat the event as a notification and
// fetch the signature request from the API before acting on it.
//
// The reply: Dropbox Sign requires the response body "Hello API Event Received" (otherwise it
// retries a delivery that was already accepted, which the identity then deduplicates), so the
// protocol's SuccessReply sends it in place of hookverify's generic acknowledgement.
//
// Verify rejects, in this order: a body whose json field is absent (multipart/form-data or
// urlencoded) or that is not a JSON object otherwise (missing signature); a json field that is
// not a JSON object with an "event" object holding string event_time, event_type and event_hash
// (malformed signature); an event_hash that is not 64 lowercase hex digits (malformed
// signature); no key matching (signature mismatch).
func HelloSign() *Protocol {
	return &Protocol{
		Name:             hellosignName,
		SuccessReply:     &Reply{Status: 200, Headers: Headers{{Name: "Content-Type", Value: "text/plain"}}, Body: []byte("Hello API Event Received")},
		DisplayName:      "Dropbox Sign (HelloSign)",
		SignatureScheme:  `event.event_hash in the "json" form field: HMAC-SHA256 (hex) of event_time + event_type, keyed with the API key`,
		StaticCredential: true,
		IdentitySource:   `"json-sha256:" + hex SHA-256 of the json form field (the event as sent; Dropbox Sign sends no event id, and a retry resends the same event)`,
		DocsURL:          "https://developers.hellosign.com/docs/events/overview/",
		Retries: "A callback not answered 200 with \"Hello API Event Received\" in the body is retried " +
			"with growing delays and the callback URL is eventually disabled (the schedule is not " +
			"documented in the sources read). event_time is when the event happened, not when it " +
			"was sent, so it is not checked against a tolerance; retries carry the same event.",
		ParseSecret:   sharedSecretParser("Dropbox Sign API key"),
		Verify:        verifyHelloSign,
		Sign:          signHelloSign,
		SignBody:      signBodyHelloSign,
		ExampleSecret: exampleHelloSignSecret,
		ExampleBody:   hellosignExampleBody,
	}
}

// hellosignEvent is the signed part of a callback.
type hellosignEvent struct {
	Event *struct {
		Time *string `json:"event_time"`
		Type *string `json:"event_type"`
		Hash *string `json:"event_hash"`
	} `json:"event"`
}

// hellosignJSON returns the json field of the callback body. Errors are *Rejection.
func hellosignJSON(req *Request) ([]byte, error) {
	ct, _ := req.Headers.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err == nil && mt == "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(req.Body), params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				return nil, Reject(ReasonMissingSignature, "the multipart body has no json field")
			}
			if part.FormName() != "json" {
				continue
			}
			data, err := io.ReadAll(io.LimitReader(part, hellosignMaxJSON+1))
			if err != nil || len(data) > hellosignMaxJSON {
				return nil, Reject(ReasonMalformedSignature, "the json field cannot be read or is over %d bytes", hellosignMaxJSON)
			}
			return data, nil
		}
	case err == nil && mt == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(req.Body))
		if err != nil || len(form["json"]) != 1 {
			return nil, Reject(ReasonMissingSignature, "the form body has no single json field")
		}
		return []byte(form["json"][0]), nil
	}
	return req.Body, nil
}

func verifyHelloSign(req *Request, keys []Key, _ Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	data, err := hellosignJSON(req)
	if err != nil {
		return Result{}, err
	}
	var ev hellosignEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Result{}, Reject(ReasonMissingSignature, "the callback event is not a JSON object")
	}
	if ev.Event == nil || ev.Event.Time == nil || ev.Event.Type == nil || ev.Event.Hash == nil {
		return Result{}, Reject(ReasonMalformedSignature, "the event lacks a string event_time, event_type or event_hash")
	}
	sig, ok := decodeLowerHex(*ev.Event.Hash, sha256.Size)
	if !ok {
		return Result{}, Reject(ReasonMalformedSignature, "event_hash is not 64 lowercase hex digits")
	}
	keyID, ok := matchKey(keys, [][]byte{sig}, sha256.New, macMessage([]byte(*ev.Event.Type), *ev.Event.Time))
	if !ok {
		return Result{}, rejectNoMatch("event_hash", 0, keys)
	}
	sum := sha256.Sum256(data)
	return Result{KeyID: keyID, EventID: "json-sha256:" + hex.EncodeToString(sum[:])}, nil
}

// signBodyHelloSign sets event.event_hash in the JSON event in.Body (adding event_time from
// in.Timestamp when absent) and wraps it as the multipart json field Dropbox Sign posts. An
// account has one API key, so only secrets[0] signs.
func signBodyHelloSign(in SignInput, secrets []string) ([]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("hellosign: sign needs an API key")
	}
	key, err := sharedSecretParser("Dropbox Sign API key")(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("hellosign: %w", err)
	}
	var top map[string]any
	if err := json.Unmarshal(in.Body, &top); err != nil || top == nil {
		return nil, errors.New("hellosign: the body must be a JSON object")
	}
	event, _ := top["event"].(map[string]any)
	if event == nil {
		return nil, errors.New(`hellosign: the body has no "event" object`)
	}
	typ, _ := event["event_type"].(string)
	if typ == "" {
		return nil, errors.New("hellosign: the event has no event_type")
	}
	ts, _ := event["event_time"].(string)
	if ts == "" {
		if in.Timestamp.IsZero() {
			return nil, errors.New("hellosign: the event has no event_time and no timestamp was given")
		}
		ts = strconv.FormatInt(in.Timestamp.Unix(), 10)
		event["event_time"] = ts
	}
	event["event_hash"] = hex.EncodeToString(hmacSum(sha256.New, key, macMessage([]byte(typ), ts)))
	data, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("hellosign: %w", err)
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(hellosignBoundary); err != nil {
		return nil, err
	}
	if err := w.WriteField("json", string(data)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// signHelloSign returns the Content-Type of the multipart body SignBody builds; the signature
// itself is inside the body.
func signHelloSign(_ SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("hellosign: sign needs an API key")
	}
	return Headers{{Name: "Content-Type", Value: "multipart/form-data; boundary=" + hellosignBoundary}}, nil
}

// exampleHelloSignSecret is an API key in Dropbox Sign's format: 64 lowercase hex digits.
func exampleHelloSignSecret() (string, string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", "", err
	}
	s := hex.EncodeToString(b)
	return s, s, nil
}

// hellosignExampleBody is a signature_request_signed event before signing; the event id goes in
// the signature request id.
func hellosignExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"event":{"event_type":"signature_request_signed","event_metadata":{"related_signature_id":"5687fb7bc2bd9b8f2c5b2a9e8f7e6d5c","reported_for_account_id":"6421d70b9bd45059fa207d03ab8d1b96515b472c","reported_for_app_id":null,"event_message":null}},"signature_request":{"signature_request_id":` + string(id) + `,"title":"NDA","is_complete":false}}`)
}
