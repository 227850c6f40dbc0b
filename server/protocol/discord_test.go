package protocol

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RFC 8032 section 7.1, TEST 1 and TEST 2 key pairs (seed || public key, and public key).
const (
	rfc8032Test1Private = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60" + "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	rfc8032Test1Public  = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	rfc8032Test2Private = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb" + "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
	rfc8032Test2Public  = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"

	discordBody = `{"application_id":"1234560123453231555","id":"1234567890123456789","token":"aW50ZXJhY3Rpb24","type":2,"version":1,"data":{"id":"1","name":"ping","type":1}}`
)

func discordSignHex(t testing.TB, privHex, ts, body string) string {
	t.Helper()
	raw, err := hex.DecodeString(privHex)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(ed25519.Sign(ed25519.PrivateKey(raw), []byte(ts+body)))
}

func discordRequest(ts, sig, body string) *Request {
	h := Headers{}
	if sig != "" {
		h = append(h, Header{Name: "X-Signature-Ed25519", Value: sig})
	}
	if ts != "" {
		h = append(h, Header{Name: "X-Signature-Timestamp", Value: ts})
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

func discordSigned(t testing.TB, ts int64, body, priv string) *Request {
	s := strconv.FormatInt(ts, 10)
	return discordRequest(s, discordSignHex(t, priv, s, body), body)
}

// TestRFC8032KeysAndHelper anchors the key encoding: the RFC 8032 TEST 1 and TEST 2
// signatures (empty message, and the single byte 0x72) verify through matchEd25519Key under
// the public keys parsed the way Discord keys are.
func TestRFC8032KeysAndHelper(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pub, msg, sig string }{
		{rfc8032Test1Public, "", "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{rfc8032Test2Public, "r", "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
	} {
		key, err := parseDiscordPublicKey(tc.pub)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := hex.DecodeString(tc.sig)
		if id, ok := matchEd25519Key([]Key{{ID: "short", Material: key[:31]}, {ID: "rfc", Material: key}}, sig, []byte(tc.msg)); !ok || id != "rfc" {
			t.Fatalf("RFC 8032 vector does not verify: %q %v", id, ok)
		}
		if _, ok := matchEd25519Key([]Key{{ID: "rfc", Material: key}}, sig, []byte(tc.msg+"x")); ok {
			t.Fatal("RFC 8032 signature verifies another message")
		}
	}
	for _, priv := range []string{rfc8032Test1Private, rfc8032Test2Private} {
		if _, err := discordSigningKey(priv); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscordVerify(t *testing.T) {
	t.Parallel()
	p := Discord()
	now := fixedNow.Unix()
	good := discordSigned(t, now, discordBody, rfc8032Test1Private)
	tol := int64(discordDefaultTolerance / time.Second)
	webhookEvent := `{"version":1,"application_id":"1234560123453231555","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834","data":{"integration_type":1,"scopes":["applications.commands"],"user":{"id":"1"}}}}`
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{rfc8032Test1Public}, wantKey: "k0", wantEvent: "1234567890123456789"},
		{name: "body tampered by one trailing space", req: withBody(good, []byte(discordBody+" ")), keys: []string{rfc8032Test1Public}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: withHeader(good, "X-Signature-Timestamp", strconv.FormatInt(now+1, 10)), keys: []string{rfc8032Test1Public}, wantReason: ReasonSignatureMismatch},
		{name: "wrong key", req: good, keys: []string{rfc8032Test2Public}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: first key matches", req: good, keys: []string{rfc8032Test1Public, rfc8032Test2Public}, wantKey: "k0", wantEvent: "1234567890123456789"},
		{name: "rotation: second key matches", req: discordSigned(t, now, discordBody, rfc8032Test2Private), keys: []string{rfc8032Test1Public, rfc8032Test2Public}, wantKey: "k1", wantEvent: "1234567890123456789"},
		{name: "uppercase public key accepted", req: good, keys: []string{strings.ToUpper(rfc8032Test1Public)}, wantKey: "k0", wantEvent: "1234567890123456789"},
		{name: "missing signature header", req: withoutHeader(good, "X-Signature-Ed25519"), keys: []string{rfc8032Test1Public}, wantReason: ReasonMissingSignature},
		{name: "empty signature header", req: withHeader(good, "X-Signature-Ed25519", ""), keys: []string{rfc8032Test1Public}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: short", req: withHeader(good, "X-Signature-Ed25519", header(good, "X-Signature-Ed25519")[:126]), keys: []string{rfc8032Test1Public}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: uppercase", req: withHeader(good, "X-Signature-Ed25519", strings.ToUpper(header(good, "X-Signature-Ed25519"))), keys: []string{rfc8032Test1Public}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: not hex", req: withHeader(good, "X-Signature-Ed25519", strings.Repeat("zz", 64)), keys: []string{rfc8032Test1Public}, wantReason: ReasonMalformedSignature},
		{name: "invalid signature (Discord's routine probe)", req: withHeader(good, "X-Signature-Ed25519", strings.Repeat("00", 64)), keys: []string{rfc8032Test1Public}, wantReason: ReasonSignatureMismatch},
		{name: "missing timestamp", req: withoutHeader(good, "X-Signature-Timestamp"), keys: []string{rfc8032Test1Public}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not decimal", req: withHeader(good, "X-Signature-Timestamp", "2024-10-18T14:42:53Z"), keys: []string{rfc8032Test1Public}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: discordSigned(t, now-tol-1, discordBody, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: discordSigned(t, now+tol+1, discordBody, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "10-minute-late retry accepted", req: discordSigned(t, now-600, discordBody, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, params: Params{Now: fixedNow}, wantKey: "k0", wantEvent: "1234567890123456789"},
		{name: "bad signature beats stale timestamp", req: discordSigned(t, now-100000, discordBody, rfc8032Test2Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonSignatureMismatch},
		{name: "webhook event: body-hash identity", req: discordSigned(t, now, webhookEvent, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(webhookEvent))},
		{name: "interaction without id", req: discordSigned(t, now, `{"type":3,"token":"x"}`, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonMissingEventID},
		{name: "interaction with numeric id", req: discordSigned(t, now, `{"type":2,"id":123}`, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonMissingEventID},
		{name: "no type", req: discordSigned(t, now, `{"id":"1"}`, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonMalformedPayload},
		{name: "body not JSON", req: discordSigned(t, now, `type=1`, rfc8032Test1Private), keys: []string{rfc8032Test1Public}, wantReason: ReasonMalformedPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: discordDefaultTolerance}
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && (res.EventID != tc.wantEvent || res.Handshake != nil) {
				t.Fatalf("result %+v, want event %q", res, tc.wantEvent)
			}
		})
	}
}

func TestDiscordPings(t *testing.T) {
	t.Parallel()
	p := Discord()
	keys := keysFor(t, p, rfc8032Test1Public)
	params := Params{Now: fixedNow}
	// Shapes from discord/discord-api-docs developers/interactions/receiving-and-responding
	// (PING, type 1) and developers/events/webhook-events.mdx (PING, type 0).
	const interactionPing = `{"application_id":"1234560123453231555","id":"1234567890123456789","token":"aW50ZXJhY3Rpb24","type":1,"user":{"id":"1"},"version":1}`
	const webhookPing = `{"version":1,"application_id":"1234560123453231555","type":0}`
	t.Run("interaction PING answered with PONG", func(t *testing.T) {
		t.Parallel()
		res, err := p.Verify(discordSigned(t, fixedNow.Unix(), interactionPing, rfc8032Test1Private), keys, params)
		if err != nil {
			t.Fatal(err)
		}
		h := res.Handshake
		if h == nil || res.KeyID != "k0" || res.EventID != "" || h.Status != 200 || string(h.Body) != `{"type":1}` || header(&Request{Headers: h.Headers}, "Content-Type") != "application/json" {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("webhook PING answered with 204", func(t *testing.T) {
		t.Parallel()
		res, err := p.Verify(discordSigned(t, fixedNow.Unix(), webhookPing, rfc8032Test1Private), keys, params)
		if err != nil {
			t.Fatal(err)
		}
		h := res.Handshake
		if h == nil || res.KeyID != "k0" || h.Status != 204 || len(h.Body) != 0 || header(&Request{Headers: h.Headers}, "Content-Type") == "" {
			t.Fatalf("result %+v", res)
		}
	})
	for _, tc := range []struct {
		name   string
		req    *Request
		reason Reason
	}{
		{"forged interaction PING rejected", discordSigned(t, fixedNow.Unix(), interactionPing, rfc8032Test2Private), ReasonSignatureMismatch},
		{"forged webhook PING rejected", discordSigned(t, fixedNow.Unix(), webhookPing, rfc8032Test2Private), ReasonSignatureMismatch},
		{"unsigned PING rejected", &Request{Body: []byte(interactionPing)}, ReasonMissingSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keys, params)
			checkOutcome(t, res, err, tc.reason, "", tc.req)
		})
	}
}

// TestDiscordSignDeterministic: Discord publishes no signed sample request, so this pins the
// documented algorithm (Ed25519 over timestamp + body, hex; discord-api-docs
// developers/interactions/overview.mdx) with the RFC 8032 TEST 1 key: Ed25519 is
// deterministic, so Sign must equal an independent crypto/ed25519 signature of ts+body.
func TestDiscordSignDeterministic(t *testing.T) {
	t.Parallel()
	p := Discord()
	h, err := p.Sign(SignInput{Body: []byte(discordBody), Timestamp: time.Unix(1729262573, 0)}, []string{rfc8032Test1Private, rfc8032Test2Private})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Headers: h}
	if header(r, "X-Signature-Timestamp") != "1729262573" || header(r, "X-Signature-Ed25519") != discordSignHex(t, rfc8032Test1Private, "1729262573", discordBody) {
		t.Fatalf("Sign = %+v", h)
	}
}

func TestDiscordSecrets(t *testing.T) {
	t.Parallel()
	p := Discord()
	for _, tc := range []struct {
		name   string
		secret string
	}{
		{"empty", ""},
		{"short", rfc8032Test1Public[:62]},
		{"not hex", strings.Repeat("g", 64)},
		{"private key given as public", rfc8032Test1Private},
	} {
		if _, err := p.ParseSecret(tc.secret); !errors.Is(err, ErrInvalidSecret) || (tc.secret != "" && strings.Contains(err.Error(), tc.secret)) {
			t.Errorf("%s: ParseSecret = %v", tc.name, err)
		}
	}
	bad := rfc8032Test1Private[:64] + rfc8032Test2Public
	for _, s := range []string{bad, rfc8032Test1Public, ""} {
		if _, err := p.Sign(SignInput{Body: []byte(discordBody), Timestamp: fixedNow}, []string{s}); err == nil {
			t.Errorf("Sign with %q succeeded", s)
		}
	}
	if _, err := p.Sign(SignInput{Body: []byte(discordBody)}, []string{rfc8032Test1Private}); err == nil {
		t.Error("Sign without a timestamp succeeded")
	}
	signing, verifying, err := p.ExampleSecret()
	if err != nil || len(signing) != 128 || len(verifying) != 64 || signing[64:] != verifying {
		t.Fatalf("ExampleSecret = %d, %d, %v", len(signing), len(verifying), err)
	}
}

func FuzzDiscordSignatureHeader(f *testing.F) {
	p := Discord()
	keys := keysFor(f, p, rfc8032Test1Public)
	params := Params{Now: fixedNow}
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	f.Add(discordSignHex(f, rfc8032Test1Private, ts, discordBody), ts, []byte(discordBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, timestamp string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(discordRequest(timestamp, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = discordIdentity(body)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, rfc8032Test1Private)
		checkMutation(t, p, keys, params, req, "X-Signature-Ed25519", pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, "X-Signature-Timestamp", pos, repl)
	})
}

// TestDiscordInteractionAckIsAnInteractionResponse: an interaction received over HTTP must be
// answered, within 3 seconds, by an Interaction Response object ({"type": <callback type>, ...})
// or by 202 with no body after a callback the app already sent; otherwise Discord shows "This
// interaction failed" and invalidates the token, so the worker that later takes the stored
// interaction cannot answer it at all (discord-api-docs developers/interactions/
// receiving-and-responding.mdx, "Responding to an Interaction", "Interaction Callback"). A
// queued interaction is answered with a deferred response, which keeps the token usable for
// 15 minutes: DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE (5) for commands and modal submits,
// DEFERRED_UPDATE_MESSAGE (6) for components; an autocomplete, which cannot be deferred, gets
// an empty APPLICATION_COMMAND_AUTOCOMPLETE_RESULT (8). hookverify's generic
// {"status":"accepted"} is none of these.
func TestDiscordInteractionAckIsAnInteractionResponse(t *testing.T) {
	t.Parallel()
	p := Discord()
	keys := keysFor(t, p, rfc8032Test1Public)
	params := Params{Now: fixedNow}
	for _, tc := range []struct {
		name     string
		body     string
		wantType int
	}{
		{"application command", `{"application_id":"1","id":"100","token":"t","type":2,"version":1,"data":{"id":"1","name":"ping","type":1}}`, 5},
		{"message component", `{"application_id":"1","id":"101","token":"t","type":3,"version":1,"data":{"custom_id":"b","component_type":2}}`, 6},
		{"autocomplete", `{"application_id":"1","id":"102","token":"t","type":4,"version":1,"data":{"id":"1","name":"ping","type":1}}`, 8},
		{"modal submit", `{"application_id":"1","id":"103","token":"t","type":5,"version":1,"data":{"custom_id":"m","components":[]}}`, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(discordSigned(t, fixedNow.Unix(), tc.body, rfc8032Test1Private), keys, params)
			if err != nil {
				t.Fatal(err)
			}
			if res.Handshake != nil || res.EventID == "" {
				t.Fatalf("an interaction must be a delivery (claimed and stored): %+v", res)
			}
			r := res.SuccessReply
			if r == nil {
				t.Fatal("no SuccessReply: the interaction is answered with hookverify's generic JSON, which Discord fails")
			}
			var got struct {
				Type *int `json:"type"`
			}
			if r.Status != 200 || json.Unmarshal(r.Body, &got) != nil || got.Type == nil || *got.Type != tc.wantType ||
				header(&Request{Headers: r.Headers}, "Content-Type") != "application/json" {
				t.Fatalf("reply %d %q %v, want 200 application/json with type %d", r.Status, r.Body, r.Headers, tc.wantType)
			}
		})
	}
}
