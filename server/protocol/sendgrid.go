package protocol

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SendGrid's signed Event Webhook signs every POST with ECDSA P-256 over SHA-256 of
// X-Twilio-Email-Event-Webhook-Timestamp + raw body (no separator); the signature is base64 of
// an ASN.1 DER {r, s} in X-Twilio-Email-Event-Webhook-Signature, verifiable with the public key
// SendGrid shows when signing is enabled (base64 DER SubjectPublicKeyInfo, no PEM armor). The
// body is a JSON array of events followed by "\r\n"; it is verified byte for byte, never trimmed.
const (
	sendgridName             = "sendgrid"
	sendgridSignatureHeader  = "X-Twilio-Email-Event-Webhook-Signature"
	sendgridTimestampHeader  = "X-Twilio-Email-Event-Webhook-Timestamp"
	sendgridBatchIDPrefix    = "sg-events-sha256:"
	sendgridDefaultTolerance = 25 * time.Hour
)

// SendGrid returns the protocol for the SendGrid (Twilio SendGrid) signed Event Webhook.
//
// Verify rejects, in this order: no X-Twilio-Email-Event-Webhook-Signature (missing
// signature); a signature that is not standard base64 of a DER SEQUENCE of two INTEGERs with
// nothing after it (malformed signature); no or empty timestamp header, or one that is not
// decimal unix seconds (missing timestamp); no public key verifying the signature (signature
// mismatch); the timestamp more than the tolerance away from Now in either direction
// (timestamp out of tolerance); a body that is not a JSON array of objects (malformed payload);
// an empty array, or an sg_event_id that is present but not a non-empty string (missing event
// id).
func SendGrid() *Protocol {
	return &Protocol{
		Name:             sendgridName,
		DisplayName:      "SendGrid Event Webhook",
		SignatureScheme:  "ECDSA P-256/SHA-256 (base64 DER) of timestamp + body, X-Twilio-Email-Event-Webhook-Signature",
		SignsTimestamp:   true,
		DefaultTolerance: sendgridDefaultTolerance,
		IdentitySource: `the batch's sg_event_id values (SendGrid's documented dedup key, one per event): the ` +
			`sg_event_id itself when the batch holds one distinct id, else "sg-events-sha256:" + hex SHA-256 ` +
			`of the sorted distinct ids joined by "\n"; if any event lacks an sg_event_id, "body-sha256:" + ` +
			`hex SHA-256 of the raw body. Consumers should still dedupe events by sg_event_id, since a retried ` +
			`batch is not documented to hold the same events`,
		DocsURL: "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
		Retries: "Any non-2xx answer makes SendGrid retry the POST \"at increasing intervals for up to 24 hours " +
			"after the event occurs\" (https://docs.sendgrid.com/for-developers/tracking-events/troubleshooting). " +
			"Whether a retry is signed with a fresh timestamp is not documented and the official helpers check " +
			"no timestamp, so the default tolerance is 25 hours: a retry signed at the first attempt is still " +
			"accepted, and a replay inside the window yields the same identity and is caught as a duplicate.",
		ParseSecret:   parseSendGridPublicKey,
		Verify:        verifySendGrid,
		Sign:          signSendGrid,
		ExampleSecret: exampleSendGridSecret,
		ExampleBody:   sendgridExampleBody,
	}
}

// parseSendGridPublicKey checks the verification key SendGrid displays: standard base64 of a
// DER SubjectPublicKeyInfo holding a P-256 key. The DER bytes are the key material.
func parseSendGridPublicKey(secret string) ([]byte, error) {
	if strings.Contains(secret, "-----BEGIN") {
		return nil, invalidSecret("give the SendGrid public key as SendGrid shows it: base64 without PEM armor")
	}
	der, err := base64.StdEncoding.Strict().DecodeString(secret)
	if err != nil || len(der) == 0 {
		return nil, invalidSecret("the SendGrid public key is not standard base64")
	}
	if _, err := sendgridPublicKey(der); err != nil {
		return nil, err
	}
	return der, nil
}

// sendgridPublicKey parses DER SubjectPublicKeyInfo bytes into a P-256 key.
func sendgridPublicKey(der []byte) (*ecdsa.PublicKey, error) {
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, invalidSecret("the SendGrid public key is not a DER SubjectPublicKeyInfo")
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, invalidSecret("the SendGrid public key is not an ECDSA P-256 key")
	}
	return ec, nil
}

// parseSendGridSigningKey decodes a private key given as standard base64 of DER, SEC1 ("EC
// PRIVATE KEY", the form of sendgrid-go's test key) or PKCS#8.
func parseSendGridSigningKey(secret string) (*ecdsa.PrivateKey, error) {
	der, err := base64.StdEncoding.Strict().DecodeString(secret)
	if err != nil {
		return nil, invalidSecret("the signing key is not standard base64 of a DER EC private key")
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil && k.Curve == elliptic.P256() {
		return k, nil
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if ec, ok := k.(*ecdsa.PrivateKey); ok && ec.Curve == elliptic.P256() {
			return ec, nil
		}
	}
	return nil, invalidSecret("the signing key is not a DER (SEC1 or PKCS#8) ECDSA P-256 private key")
}

// exampleSendGridSecret returns a fresh P-256 pair: signing is base64 SEC1 DER, verifying is
// base64 DER SubjectPublicKeyInfo as SendGrid displays it.
func exampleSendGridSecret() (string, string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("protocol: generating a P-256 key: %w", err)
	}
	priv, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(priv), base64.StdEncoding.EncodeToString(pub), nil
}

// sendgridExampleBody is a one-event batch, with the "\r\n" SendGrid appends.
func sendgridExampleBody(eventID string) []byte {
	ev := marshalJSONUnescaped([]map[string]any{{
		"email":         "example@test.com",
		"event":         "processed",
		"sg_event_id":   eventID,
		"sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
		"smtp-id":       "<14c5d75ce93.dfd.64b469@ismtpd-555>",
		"timestamp":     1767000000,
	}})
	return append(ev, '\r', '\n')
}

// sendgridDER is the ASN.1 shape of an ECDSA signature.
type sendgridDER struct {
	R, S *big.Int
}

// parseSendGridSignature decodes the header to DER bytes that parse as {r, s}. Its errors are
// *Rejection.
func parseSendGridSignature(v string) ([]byte, error) {
	if v == "" {
		return nil, Reject(ReasonMalformedSignature, "%s is empty", sendgridSignatureHeader)
	}
	for i := 0; i < len(v); i++ {
		if v[i] == '\r' || v[i] == '\n' {
			return nil, Reject(ReasonMalformedSignature, "%s is not standard base64", sendgridSignatureHeader)
		}
	}
	der, err := base64.StdEncoding.Strict().DecodeString(v)
	if err != nil {
		return nil, Reject(ReasonMalformedSignature, "%s is not standard base64", sendgridSignatureHeader)
	}
	var sig sendgridDER
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil || len(rest) != 0 || sig.R == nil || sig.S == nil {
		return nil, Reject(ReasonMalformedSignature, "%s is not a DER ECDSA signature", sendgridSignatureHeader)
	}
	return der, nil
}

func verifySendGrid(req *Request, keys []Key, p Params) (Result, error) {
	if req == nil {
		return Result{}, Reject(ReasonMissingSignature, "no request")
	}
	raw, ok := req.Headers.Get(sendgridSignatureHeader)
	if !ok {
		return Result{}, Reject(ReasonMissingSignature, "no %s header", sendgridSignatureHeader)
	}
	sig, err := parseSendGridSignature(raw)
	if err != nil {
		return Result{}, err
	}
	tsRaw, _ := req.Headers.Get(sendgridTimestampHeader)
	if tsRaw == "" {
		return Result{}, Reject(ReasonMissingTimestamp, "no %s header", sendgridTimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsRaw)
	if !ok {
		return Result{}, Reject(ReasonMissingTimestamp, "%s is not decimal unix seconds", sendgridTimestampHeader)
	}
	h := sha256.New()
	h.Write([]byte(tsRaw))
	h.Write(req.Body)
	digest := h.Sum(nil)
	keyID, usable := "", false
	for _, k := range keys {
		pub, err := sendgridPublicKey(k.Material)
		if err != nil {
			continue
		}
		usable = true
		if ecdsa.VerifyASN1(pub, digest, sig) {
			keyID = k.ID
			break
		}
	}
	if keyID == "" {
		if usable {
			return Result{}, Reject(ReasonSignatureMismatch, "the %s signature does not verify under any public key", sendgridSignatureHeader)
		}
		return Result{}, Reject(ReasonSignatureMismatch, "no public key is configured, so the %s signature cannot verify", sendgridSignatureHeader)
	}
	if err := checkTimestamp(ts, p.Now, effectiveTolerance(p, sendgridDefaultTolerance)); err != nil {
		return Result{}, err
	}
	id, err := sendgridEventID(req.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// sendgridEventID derives the batch identity from its sg_event_id values.
func sendgridEventID(body []byte) (string, error) {
	var events []map[string]json.RawMessage
	if err := json.Unmarshal(body, &events); err != nil {
		return "", Reject(ReasonMalformedPayload, "body is not a JSON array of event objects")
	}
	if len(events) == 0 {
		return "", Reject(ReasonMissingEventID, "body is an empty array of events")
	}
	seen := make(map[string]bool, len(events))
	var ids []string
	for _, ev := range events {
		if ev == nil {
			return "", Reject(ReasonMalformedPayload, "body is not a JSON array of event objects")
		}
		id, present, ok := jsonString(ev, "sg_event_id")
		switch {
		case !present:
			return bodySHA256ID(body), nil
		case !ok || id == "":
			return "", Reject(ReasonMissingEventID, `an event's "sg_event_id" is not a non-empty string`)
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 1 {
		return ids[0], nil
	}
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return sendgridBatchIDPrefix + hex.EncodeToString(sum[:]), nil
}

// signSendGrid produces the two headers SendGrid sends. An account has one signing key pair,
// so only secrets[0] (a base64 DER private key) signs. ECDSA signatures are randomized.
func signSendGrid(in SignInput, secrets []string) (Headers, error) {
	if len(secrets) == 0 {
		return nil, errors.New("sendgrid: sign needs a private key")
	}
	if in.Timestamp.IsZero() || in.Timestamp.Unix() < 0 {
		return nil, errors.New("sendgrid: sign needs a timestamp at or after 1970")
	}
	priv, err := parseSendGridSigningKey(secrets[0])
	if err != nil {
		return nil, fmt.Errorf("sendgrid: %w", err)
	}
	ts := strconv.FormatInt(in.Timestamp.Unix(), 10)
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(in.Body)
	sig, err := ecdsa.SignASN1(rand.Reader, priv, h.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("sendgrid: signing: %w", err)
	}
	return Headers{
		{Name: sendgridSignatureHeader, Value: base64.StdEncoding.EncodeToString(sig)},
		{Name: sendgridTimestampHeader, Value: ts},
	}, nil
}
