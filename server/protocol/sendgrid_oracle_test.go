package protocol

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"
)

// sendgrid-go's own eventwebhook test vector (helpers/eventwebhook/eventwebhook_test.go).
const (
	sendgridOraclePublicKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
	sendgridOracleSignature = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
	sendgridOracleTimestamp = "1600112502"
	sendgridOracleBody      = `[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]` + "\r\n"
	sendgridOracleEventID   = "ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA"
)

func sendgridOracleVerify(t *testing.T, publicKey string, body []byte, sig, ts string) bool {
	t.Helper()
	pk, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(publicKey)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := eventwebhook.VerifySignature(pk, body, sig, ts)
	return ok && err == nil
}

// TestSendGridOracle cross-checks with sendgrid-go's helpers/eventwebhook. The SDK has no
// signer: direction one uses its published vector and a fresh signature over exactly what it
// verifies (timestamp + body), both checked against the SDK first. sendgrid-go checks no
// clock, so our Params.Now is set to the signed timestamp.
func TestSendGridOracle(t *testing.T) {
	t.Parallel()
	p := SendGrid()
	t.Run("sendgrid-go vector, we verify", func(t *testing.T) {
		t.Parallel()
		if !sendgridOracleVerify(t, sendgridOraclePublicKey, []byte(sendgridOracleBody), sendgridOracleSignature, sendgridOracleTimestamp) {
			t.Fatal("sendgrid-go rejects its own vector (body transcribed wrongly?)")
		}
		ts, _ := strconv.ParseInt(sendgridOracleTimestamp, 10, 64)
		params := Params{Now: time.Unix(ts, 0)}
		req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(sendgridOracleBody), Headers: Headers{
			{Name: eventwebhook.VerificationHTTPHeader, Value: sendgridOracleSignature},
			{Name: eventwebhook.TimestampHTTPHeader, Value: sendgridOracleTimestamp},
		}}
		res, err := p.Verify(req, keysFor(t, p, sendgridOraclePublicKey), params)
		checkOutcome(t, res, err, 0, "k0", req)
		if res.EventID != sendgridOracleEventID {
			t.Fatalf("EventID = %q", res.EventID)
		}
		body := []byte(sendgridOracleBody)
		body[10] ^= 1
		tampered := withBody(req, body)
		if sendgridOracleVerify(t, sendgridOraclePublicKey, tampered.Body, sendgridOracleSignature, sendgridOracleTimestamp) {
			t.Fatal("sendgrid-go accepts a tampered body")
		}
		res, err = p.Verify(tampered, keysFor(t, p, sendgridOraclePublicKey), params)
		checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
	})
	signing, verifying, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("signed as sendgrid-go verifies, we verify", func(t *testing.T) {
		t.Parallel()
		der, _ := base64.StdEncoding.DecodeString(signing)
		priv, err := x509.ParseECPrivateKey(der)
		if err != nil {
			t.Fatal(err)
		}
		ts := strconv.FormatInt(fixedNow.Unix(), 10)
		h := sha256.Sum256([]byte(ts + sendgridOracleBody))
		raw, err := ecdsa.SignASN1(rand.Reader, priv, h[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := base64.StdEncoding.EncodeToString(raw)
		if !sendgridOracleVerify(t, verifying, []byte(sendgridOracleBody), sig, ts) {
			t.Fatal("sendgrid-go rejects the oracle signature")
		}
		req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(sendgridOracleBody), Headers: Headers{
			{Name: eventwebhook.VerificationHTTPHeader, Value: sig},
			{Name: eventwebhook.TimestampHTTPHeader, Value: ts},
		}}
		res, err := p.Verify(req, keysFor(t, p, verifying), Params{Now: fixedNow})
		checkOutcome(t, res, err, 0, "k0", req)
		body := []byte(sendgridOracleBody)
		body[len(body)-3] ^= 1
		tampered := withBody(req, body)
		res, err = p.Verify(tampered, keysFor(t, p, verifying), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
	})
	t.Run("we sign, sendgrid-go verifies", func(t *testing.T) {
		t.Parallel()
		s, err := SignDelivery(p, SignInput{Body: []byte(sendgridOracleBody), EventID: sendgridOracleEventID, Timestamp: fixedNow}, []string{signing})
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Headers.Get(eventwebhook.VerificationHTTPHeader)
		ts, _ := s.Headers.Get(eventwebhook.TimestampHTTPHeader)
		if !sendgridOracleVerify(t, verifying, s.Body, sig, ts) {
			t.Fatal("sendgrid-go rejects our delivery")
		}
		if sendgridOracleVerify(t, verifying, append(append([]byte(nil), s.Body...), ' '), sig, ts) {
			t.Fatal("sendgrid-go accepts a tampered body")
		}
		if sendgridOracleVerify(t, sendgridOraclePublicKey, s.Body, sig, ts) {
			t.Fatal("sendgrid-go accepts our delivery under another key")
		}
	})
}
