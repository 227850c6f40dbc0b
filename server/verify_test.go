package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// Shorter names for the verdicts and reasons the tests expect.
const (
	accepted  = hookverifyv1.Verdict_VERDICT_ACCEPTED
	duplicate = hookverifyv1.Verdict_VERDICT_DUPLICATE
	rejected  = hookverifyv1.Verdict_VERDICT_REJECTED

	unknownEndpoint   = hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT
	bodyTooLarge      = hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE
	missingSignature  = hookverifyv1.RejectReason_REJECT_REASON_MISSING_SIGNATURE
	malformedSig      = hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_SIGNATURE
	mismatch          = hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH
	missingTimestamp  = hookverifyv1.RejectReason_REJECT_REASON_MISSING_TIMESTAMP
	outOfTolerance    = hookverifyv1.RejectReason_REJECT_REASON_TIMESTAMP_OUT_OF_TOLERANCE
	missingEventID    = hookverifyv1.RejectReason_REJECT_REASON_MISSING_EVENT_ID
	malformedPayload  = hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD
	endpointDisabled  = hookverifyv1.RejectReason_REJECT_REASON_ENDPOINT_DISABLED
	noReason          = hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED
	stripeSigHeader   = "Stripe-Signature"
	standardSigHeader = "webhook-signature"
)

// stripeBodyWithID returns a Stripe-like event body whose "id" member is the raw JSON given.
func stripeBodyWithID(rawID string) []byte {
	return []byte(`{"id":` + rawID + `,"object":"event","type":"invoice.paid"}`)
}

// TestVerifyCheckOrder proves the order of the checks: body size (server ceiling), endpoint
// (unknown, disabled), body size (endpoint limit), signature, timestamp, identity, claim; and
// that a duplicate is reported only to an authenticated delivery.
func TestVerifyCheckOrder(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "small", Provider: "stripe", MaxBodyBytes: 64})
		smallSecret := p.newSecret()
		e.addSecret(t, "small", smallSecret)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "off", Provider: "stripe", MaxBodyBytes: 64, Disabled: true})
		offSecret := p.newSecret()
		e.addSecret(t, "off", offSecret)
		forger := p.newSecret()
		now := e.clock.Now()
		stale := now.Add(-time.Hour)
		big := p.body(eventID(p) + strings.Repeat("x", 100)) // above the 64 bytes of small and off
		noID := []byte(`{"object":"event","type":"invoice.paid"}`)

		tests := []struct {
			name string
			req  *hookverifyv1.VerifyRequest
			want hookverifyv1.RejectReason
		}{
			{"body above the server ceiling is refused before the endpoint is looked up",
				withBody(sign(t, p, "nope", "", p.body(eventID(p)), now, secret), bytes.Repeat([]byte{' '}, server.MaxBodyCeiling+1)), bodyTooLarge},
			{"unknown endpoint", sign(t, p, "nope", "", p.body(eventID(p)), now, secret), unknownEndpoint},
			{"endpoint id no endpoint can have (NUL) is unknown on every backend", withEndpoint(sign(t, p, "shop", "", p.body(eventID(p)), now, secret), "shop\x00"), unknownEndpoint},
			{"disabled endpoint before the endpoint's body limit", sign(t, p, "off", "", big, now, offSecret), endpointDisabled},
			{"disabled endpoint before the signature", sign(t, p, "off", "", p.body(eventID(p)), now, offSecret), endpointDisabled},
			{"disabled endpoint with a forged signature", sign(t, p, "off", "", p.body(eventID(p)), now, forger), endpointDisabled},
			{"endpoint body limit before the signature", sign(t, p, "small", "", big, now, forger), bodyTooLarge},
			{"endpoint body limit for a signed body", sign(t, p, "small", "", big, now, smallSecret), bodyTooLarge},
			{"signature before timestamp", sign(t, p, "shop", "", p.body(eventID(p)), stale, forger), mismatch},
			{"signature before identity", sign(t, p, "shop", "", noID, now, forger), mismatch},
			{"missing signature before identity", withoutHeaders(sign(t, p, "shop", "", noID, now, secret), stripeSigHeader), missingSignature},
			{"timestamp before identity", sign(t, p, "shop", "", noID, stale, secret), outOfTolerance},
			{"identity before claim", sign(t, p, "shop", "", noID, now, secret), missingEventID},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e.reject(t, tt.req, tt.want)
			})
		}
		if n := e.count(t); n != 0 {
			t.Fatalf("%d inbox records after rejections only, want 0", n)
		}

		for _, p := range providers {
			t.Run("duplicate only after authentication/"+p.name, func(t *testing.T) {
				endpoint := "dup-" + p.name
				secret, _ := e.setup(t, p, endpoint)
				id := eventID(p)
				real := e.deliver(t, p, endpoint, id, secret)
				first := e.accept(t, real)
				before := e.count(t)

				forged := e.deliver(t, p, endpoint, id, p.newSecret())
				e.reject(t, forged, mismatch)
				e.reject(t, withoutHeaders(real, p.sigHeaders...), missingSignature)
				e.reject(t, withBody(real, append(bytes.Clone(real.GetBody()), ' ')), mismatch)
				e.duplicate(t, real, first)
				if n := e.count(t); n != before {
					t.Fatalf("%d inbox records, want %d", n, before)
				}
			})
		}
	})
}

// TestVerifyRawBytes proves that the signature covers the exact bytes: changing only the
// body, only the signed id or only the signed timestamp is rejected, while the header-name
// case (which HTTP does not preserve) does not matter.
func TestVerifyRawBytes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, p := range providers {
			t.Run(p.name, func(t *testing.T) {
				secret, _ := e.setup(t, p, "raw-"+p.name)
				id := eventID(p)
				real := e.deliver(t, p, "raw-"+p.name, id, secret)
				body := real.GetBody()
				before := e.count(t)

				tests := []struct {
					name string
					req  *hookverifyv1.VerifyRequest
				}{
					{"one trailing space", withBody(real, append(bytes.Clone(body), ' '))},
					{"last byte removed", withBody(real, body[:len(body)-1])},
					{"one leading space", withBody(real, append([]byte{' '}, body...))},
					{"JSON re-encoded", withBody(real, reencode(t, body))},
					{"one byte flipped", withBody(real, flipLast(body))},
				}
				switch p.name {
				case "stripe":
					ts := e.clock.Now().Unix()
					tests = append(tests, struct {
						name string
						req  *hookverifyv1.VerifyRequest
					}{"only t= changed", withHeader(real, stripeSigHeader, strings.Replace(header(real, stripeSigHeader),
						"t="+strconv.FormatInt(ts, 10), "t="+strconv.FormatInt(ts+1, 10), 1))})
				case "standard-webhooks":
					ts := e.clock.Now().Unix()
					tests = append(tests, []struct {
						name string
						req  *hookverifyv1.VerifyRequest
					}{
						{"only webhook-id changed", withHeader(real, "webhook-id", id+"x")},
						{"only webhook-timestamp changed", withHeader(real, "webhook-timestamp", strconv.FormatInt(ts-1, 10))},
					}...)
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						e.reject(t, tt.req, mismatch)
					})
				}
				if n := e.count(t); n != before {
					t.Fatalf("%d inbox records written by rejected deliveries", n-before)
				}
				// The untouched delivery, with header names in another case, still passes.
				lower := proto2Lower(real)
				resp := e.accept(t, lower)
				if resp.GetEventId() != id {
					t.Fatalf("event id %q, want %q", resp.GetEventId(), id)
				}
			})
		}
	})
}

func reencode(t *testing.T, body []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, body) {
		t.Fatal("re-encoding did not change the body; the test body must not be canonical JSON")
	}
	return out
}

func flipLast(body []byte) []byte {
	out := bytes.Clone(body)
	out[len(out)-2] ^= 0x01
	return out
}

// proto2Lower returns a copy of req with every header name lowercased.
func proto2Lower(req *hookverifyv1.VerifyRequest) *hookverifyv1.VerifyRequest {
	out := withoutHeaders(req)
	for _, h := range out.Headers {
		h.Name = strings.ToLower(h.Name)
	}
	return out
}

// TestVerifyTimestampTolerance proves that signed timestamps are checked against the
// endpoint's tolerance in both directions, boundaries included, with a custom tolerance
// honoured, and that GitHub, which signs none, needs none.
func TestVerifyTimestampTolerance(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		tests := []struct {
			name      string
			tolerance time.Duration // zero: the default, 300 s
			offset    time.Duration // signed time minus now
			want      hookverifyv1.RejectReason
		}{
			{"default, now", 0, 0, noReason},
			{"default, exactly 300s old", 0, -300 * time.Second, noReason},
			{"default, 301s old", 0, -301 * time.Second, outOfTolerance},
			{"default, a day old", 0, -24 * time.Hour, outOfTolerance},
			{"default, exactly 300s ahead", 0, 300 * time.Second, noReason},
			{"default, 301s ahead", 0, 301 * time.Second, outOfTolerance},
			{"default, a year ahead", 0, 365 * 24 * time.Hour, outOfTolerance},
			{"30s, 30s old", 30 * time.Second, -30 * time.Second, noReason},
			{"30s, 31s old", 30 * time.Second, -31 * time.Second, outOfTolerance},
			{"30s, 200s old (inside the default)", 30 * time.Second, -200 * time.Second, outOfTolerance},
			{"30s, 31s ahead", 30 * time.Second, 31 * time.Second, outOfTolerance},
			{"1h, 50 minutes old", time.Hour, -50 * time.Minute, noReason},
			{"1h, 50 minutes ahead", time.Hour, 50 * time.Minute, noReason},
			{"1h, 61 minutes old", time.Hour, -61 * time.Minute, outOfTolerance},
		}
		for _, p := range []provider{stripeProvider, standardProvider} {
			for i, tt := range tests {
				t.Run(p.name+"/"+tt.name, func(t *testing.T) {
					endpoint := p.name + "-" + strconv.Itoa(i)
					ep := &hookverifyv1.Endpoint{Id: endpoint, Provider: p.name}
					if tt.tolerance != 0 {
						ep.TimestampTolerance = durationpb.New(tt.tolerance)
					}
					e.createEndpoint(t, ep)
					secret := p.newSecret()
					e.addSecret(t, endpoint, secret)
					id := eventID(p)
					req := sign(t, p, endpoint, id, p.body(id), e.clock.Now().Add(tt.offset), secret)
					if tt.want == noReason {
						e.accept(t, req)
					} else {
						e.reject(t, req, tt.want)
					}
				})
			}
		}

		t.Run("github signs no timestamp", func(t *testing.T) {
			p := githubProvider
			secret, _ := e.setup(t, p, "gh")
			req := e.deliver(t, p, "gh", eventID(p), secret)
			for _, h := range req.GetHeaders() {
				if strings.Contains(strings.ToLower(h.GetName()), "timestamp") {
					t.Fatalf("the GitHub delivery has a timestamp header %s", h.GetName())
				}
			}
			first := e.accept(t, req)
			// A redelivery a month later (GitHub keeps deliveries for redelivery) still
			// authenticates and is recognised.
			e.clock.Advance(30 * 24 * time.Hour)
			e.duplicate(t, req, first)
		})
		t.Run("missing timestamp", func(t *testing.T) {
			p := standardProvider
			secret, _ := e.setup(t, p, "sw-missing-ts")
			req := e.deliver(t, p, "sw-missing-ts", eventID(p), secret)
			e.reject(t, withoutHeaders(req, "webhook-timestamp"), missingTimestamp)
		})
	})
}

// TestVerifySeveralSignatures proves that any valid (signature, secret) pair authenticates
// when a header carries several signatures or an endpoint has several secrets, that unknown
// schemes are ignored and that undecodable signatures are MALFORMED_SIGNATURE.
func TestVerifySeveralSignatures(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		type sigCase struct {
			name string
			// make returns the delivery given the endpoint's two secrets (a, b) and an unknown one.
			make func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest
			// wantSecret is the secret that must match ("a", "b" or "either"); want is a reject
			// reason, if the delivery must be rejected.
			wantSecret string
			want       hookverifyv1.RejectReason
		}
		signedBy := func(p provider) func(secrets ...string) func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest {
			return func(which ...string) func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest {
				return func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest {
					var secrets []string
					for _, w := range which {
						secrets = append(secrets, map[string]string{"a": a, "b": b, "wrong": wrong}[w])
					}
					return e.deliver(t, p, endpoint, id, secrets...)
				}
			}
		}
		// editSig signs with secret a and rewrites the signature header with edit.
		editSig := func(p provider, name string, edit func(v string) string) func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest {
			return func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest {
				req := e.deliver(t, p, endpoint, id, a)
				return withHeader(req, name, edit(header(req, name)))
			}
		}
		stripeV1 := func(v string) string { return v[strings.Index(v, "v1="):] }
		fakeHex := strings.Repeat("ab", 32)
		fakeB64 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
		cases := map[string][]sigCase{
			"stripe": {
				{"wrong then right", signedBy(stripeProvider)("wrong", "a"), "a", noReason},
				{"right then wrong", signedBy(stripeProvider)("b", "wrong"), "b", noReason},
				{"both secrets", signedBy(stripeProvider)("a", "b"), "either", noReason},
				{"second secret only", signedBy(stripeProvider)("b"), "b", noReason},
				{"wrong only", signedBy(stripeProvider)("wrong"), "", mismatch},
				{"v0 ignored", editSig(stripeProvider, stripeSigHeader, func(v string) string {
					return strings.Replace(v, ",v1=", ",v0="+fakeHex+",v1=", 1)
				}), "a", noReason},
				{"v0 only", editSig(stripeProvider, stripeSigHeader, func(v string) string {
					return strings.Replace(v, ",v1=", ",v0=", 1)
				}), "", missingSignature},
				{"malformed hex", editSig(stripeProvider, stripeSigHeader, func(v string) string {
					return strings.Replace(v, stripeV1(v), "v1="+strings.Repeat("zz", 32), 1)
				}), "", malformedSig},
				{"uppercase hex", editSig(stripeProvider, stripeSigHeader, func(v string) string {
					return strings.Replace(v, stripeV1(v), "v1="+strings.ToUpper(stripeV1(v)[3:]), 1)
				}), "", malformedSig},
				{"truncated hex", editSig(stripeProvider, stripeSigHeader, func(v string) string { return v[:len(v)-2] }), "", malformedSig},
				{"no t", editSig(stripeProvider, stripeSigHeader, stripeV1), "", malformedSig},
			},
			"standard-webhooks": {
				{"wrong then right", signedBy(standardProvider)("wrong", "a"), "a", noReason},
				{"right then wrong", signedBy(standardProvider)("b", "wrong"), "b", noReason},
				{"second secret only", signedBy(standardProvider)("b"), "b", noReason},
				{"wrong only", signedBy(standardProvider)("wrong"), "", mismatch},
				{"v1a and v2 ignored", editSig(standardProvider, standardSigHeader, func(v string) string {
					return "v1a," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 64)) + " v2," + fakeB64 + " " + v
				}), "a", noReason},
				{"v1a only", editSig(standardProvider, standardSigHeader, func(string) string {
					return "v1a," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 64))
				}), "", missingSignature},
				{"malformed base64", editSig(standardProvider, standardSigHeader, func(string) string { return "v1,!!!not-base64!!!" }), "", malformedSig},
				{"truncated base64", editSig(standardProvider, standardSigHeader, func(v string) string { return v[:len(v)-4] }), "", malformedSig},
				{"no comma", editSig(standardProvider, standardSigHeader, func(v string) string { return strings.Replace(v, ",", "", 1) }), "", malformedSig},
			},
			"github": {
				{"the endpoint's second secret", signedBy(githubProvider)("b"), "b", noReason},
				{"wrong", signedBy(githubProvider)("wrong"), "", mismatch},
				{"malformed hex", editSig(githubProvider, "X-Hub-Signature-256", func(string) string { return "sha256=" + strings.Repeat("zz", 32) }), "", malformedSig},
				{"sha1 fallback", func(t *testing.T, endpoint, id, a, b, wrong string) *hookverifyv1.VerifyRequest {
					return withoutHeaders(e.deliver(t, githubProvider, endpoint, id, a), "X-Hub-Signature-256")
				}, "a", noReason},
			},
		}
		for _, p := range providers {
			for i, tt := range cases[p.name] {
				t.Run(p.name+"/"+tt.name, func(t *testing.T) {
					endpoint := p.name + "-" + strconv.Itoa(i)
					e.createEndpoint(t, &hookverifyv1.Endpoint{Id: endpoint, Provider: p.name})
					a, b := p.newSecret(), p.newSecret()
					ids := map[string]string{"a": e.addSecret(t, endpoint, a), "b": e.addSecret(t, endpoint, b)}
					req := tt.make(t, endpoint, eventID(p), a, b, p.newSecret())
					if tt.want != noReason {
						e.reject(t, req, tt.want)
						return
					}
					resp := e.accept(t, req)
					if tt.wantSecret == "either" && (resp.GetSecretId() == ids["a"] || resp.GetSecretId() == ids["b"]) {
						return
					}
					if resp.GetSecretId() != ids[tt.wantSecret] {
						t.Fatalf("secret_id %s, want secret %s (%s)", resp.GetSecretId(), tt.wantSecret, ids[tt.wantSecret])
					}
				})
			}
		}
	})
}

// TestVerifyIdentity proves where each protocol takes the event identity from, that a
// delivery without one is MISSING_EVENT_ID and that one the databases could not store is
// MALFORMED_PAYLOAD rather than a storage failure.
func TestVerifyIdentity(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		secrets := map[string]string{}
		for _, p := range providers {
			secrets[p.name], _ = e.setup(t, p, p.name)
		}
		now := e.clock.Now()
		signed := func(p provider, id string, body []byte) *hookverifyv1.VerifyRequest {
			return sign(t, p, p.name, id, body, now, secrets[p.name])
		}
		ghID, swID, svixID := eventID(githubProvider), eventID(standardProvider), eventID(standardProvider)
		tests := []struct {
			name   string
			req    *hookverifyv1.VerifyRequest
			wantID string
			want   hookverifyv1.RejectReason
		}{
			{"stripe body id", signed(stripeProvider, "", stripeBodyWithID(`"evt_1NsnDtLkdIwHu7ix0JXDmQp2"`)), "evt_1NsnDtLkdIwHu7ix0JXDmQp2", noReason},
			{"stripe body id, escaped", signed(stripeProvider, "", stripeBodyWithID(`"evt_\u00e9t\u00e9"`)), "evt_été", noReason},
			{"github X-GitHub-Delivery", signed(githubProvider, ghID, githubProvider.body("")), ghID, noReason},
			{"standard-webhooks webhook-id", signed(standardProvider, swID, standardProvider.body("")), swID, noReason},
			{"svix-id, svix-timestamp, svix-signature", renameHeaders(signed(standardProvider, svixID, standardProvider.body("")), "webhook-", "svix-"), svixID, noReason},

			{"stripe body without id", signed(stripeProvider, "", []byte(`{"object":"event"}`)), "", missingEventID},
			{"stripe empty id", signed(stripeProvider, "", stripeBodyWithID(`""`)), "", missingEventID},
			{"stripe numeric id", signed(stripeProvider, "", stripeBodyWithID(`42`)), "", missingEventID},
			{"stripe nested id only", signed(stripeProvider, "", []byte(`{"data":{"id":"evt_1"}}`)), "", missingEventID},
			{"github without X-GitHub-Delivery", withoutHeaders(signed(githubProvider, ghID, []byte(`{"a":1}`)), "X-GitHub-Delivery"), "", missingEventID},
			{"github empty X-GitHub-Delivery", withHeader(signed(githubProvider, ghID, []byte(`{"a":2}`)), "X-GitHub-Delivery", ""), "", missingEventID},
			{"standard-webhooks without webhook-id", withoutHeaders(signed(standardProvider, eventID(standardProvider), standardProvider.body("")), "webhook-id"), "", missingEventID},

			{`stripe id "\u0000"`, signed(stripeProvider, "", stripeBodyWithID(`"\u0000"`)), "", malformedPayload},
			{"stripe id with NUL inside", signed(stripeProvider, "", stripeBodyWithID(`"evt_\u0000x"`)), "", malformedPayload},
			{"stripe id of 600 bytes", signed(stripeProvider, "", stripeBodyWithID(`"evt_`+strings.Repeat("a", 596)+`"`)), "", malformedPayload},
			{"stripe body not JSON", signed(stripeProvider, "", []byte(`id=evt_1`)), "", malformedPayload},
			{"stripe body a JSON array", signed(stripeProvider, "", []byte(`[{"id":"evt_1"}]`)), "", malformedPayload},
			{"github delivery id with NUL", signed(githubProvider, "abc\x00def", []byte(`{"a":3}`)), "", malformedPayload},
			{"standard-webhooks id with NUL", signed(standardProvider, "msg_\x00", standardProvider.body("")), "", malformedPayload},
		}
		want := int64(0)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, err := e.call(t, tt.req)
				if err != nil {
					t.Fatalf("Verify: %v (want a verdict, not a gRPC error)", err)
				}
				if tt.want != noReason {
					if resp.GetVerdict() != rejected || resp.GetRejectReason() != tt.want {
						t.Fatalf("%s %s (%s), want REJECTED %s", resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail(), tt.want)
					}
					return
				}
				if resp.GetVerdict() != accepted {
					t.Fatalf("%s %s (%s), want ACCEPTED", resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail())
				}
				want++
				if resp.GetEventId() != tt.wantID {
					t.Fatalf("event id %q, want %q", resp.GetEventId(), tt.wantID)
				}
				d, err := e.store.GetDelivery(t.Context(), resp.GetInboxId())
				if err != nil {
					t.Fatal(err)
				}
				if d.EventID != tt.wantID {
					t.Fatalf("stored event id %q, want %q", d.EventID, tt.wantID)
				}
			})
		}
		if n := e.count(t); n != want {
			t.Fatalf("%d inbox records, want %d (one per ACCEPTED)", n, want)
		}
	})
}

// TestVerifyDurableRecord proves what an ACCEPTED delivery leaves in the inbox, byte for byte,
// and that a REJECTED one leaves nothing — so a forged copy sent first cannot block the real one.
func TestVerifyDurableRecord(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, p := range providers {
			t.Run(p.name, func(t *testing.T) {
				endpoint := "rec-" + p.name
				secret, secretID := e.setup(t, p, endpoint)
				id := eventID(p)
				body := p.body(id)
				if p.name == "github" {
					// GitHub signs whatever bytes it sends; these are not even UTF-8.
					body = []byte("payload=%7B%7D\x00\xff\xfe\r\n\t \xc3\x28")
				}
				e.clock.Advance(1234567 * time.Microsecond)
				real := sign(t, p, endpoint, id, body, e.clock.Now(), secret)
				real.Headers = append(real.Headers, &hookverifyv1.HeaderField{Name: "X-Odd", Value: "  spaced\tvalue  ü "})
				real.Method = "PUT"

				// A forger sends first, with the real event id and a wrong secret.
				before := e.count(t)
				e.reject(t, sign(t, p, endpoint, id, body, e.clock.Now(), p.newSecret()), mismatch)
				e.reject(t, withoutHeaders(real, p.sigHeaders...), missingSignature)
				if n := e.count(t); n != before {
					t.Fatalf("rejected deliveries wrote %d inbox records", n-before)
				}

				receivedAt := e.clock.Now()
				resp := e.accept(t, real)
				if resp.GetSecretId() != secretID {
					t.Fatalf("secret_id %s, want %s", resp.GetSecretId(), secretID)
				}
				if !resp.GetFirstReceivedAt().AsTime().Equal(receivedAt) {
					t.Fatalf("first_received_at %v, want the clock's %v", resp.GetFirstReceivedAt().AsTime(), receivedAt)
				}
				if n := e.count(t); n != before+1 {
					t.Fatalf("%d inbox records, want %d", n, before+1)
				}
				wantHeaders := make([]storage.Header, len(real.GetHeaders()))
				for i, h := range real.GetHeaders() {
					wantHeaders[i] = storage.Header{Name: h.GetName(), Value: h.GetValue()}
				}
				want := storage.Delivery{
					InboxID:      resp.GetInboxId(),
					Scope:        endpoint,
					EventID:      id,
					EndpointID:   endpoint,
					OperationKey: server.OperationKey(endpoint, id),
					SecretID:     secretID,
					Method:       "PUT",
					URL:          real.GetUrl(),
					Headers:      wantHeaders,
					Body:         body,
					ReceivedAt:   receivedAt,
				}
				checkDelivery(t, e.store, want)

				// A redelivery later changes nothing in the record.
				e.clock.Advance(time.Minute)
				e.duplicate(t, sign(t, p, endpoint, id, body, e.clock.Now(), secret), resp)
				checkDelivery(t, e.store, want)
			})
		}
	})
}

// checkDelivery reads the inbox record want.InboxID and compares every field.
func checkDelivery(t *testing.T, st storage.Store, want storage.Delivery) {
	t.Helper()
	got, err := st.GetDelivery(t.Context(), want.InboxID)
	if err != nil {
		t.Fatalf("GetDelivery(%s): %v", want.InboxID, err)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("stored body differs: %d bytes %q, want %d bytes %q", len(got.Body), trim(got.Body), len(want.Body), trim(want.Body))
	}
	if len(got.Headers) != len(want.Headers) {
		t.Errorf("stored %d headers %q, want %d %q", len(got.Headers), got.Headers, len(want.Headers), want.Headers)
	} else {
		for i := range want.Headers {
			if got.Headers[i] != want.Headers[i] {
				t.Errorf("stored header %d is %q, want %q", i, got.Headers[i], want.Headers[i])
			}
		}
	}
	fields := []struct{ name, got, want string }{
		{"scope", got.Scope, want.Scope},
		{"event id", got.EventID, want.EventID},
		{"endpoint", got.EndpointID, want.EndpointID},
		{"operation key", got.OperationKey, want.OperationKey},
		{"secret id", got.SecretID, want.SecretID},
		{"method", got.Method, want.Method},
		{"url", got.URL, want.URL},
	}
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("stored %s %q, want %q", f.name, f.got, f.want)
		}
	}
	if !got.ReceivedAt.Equal(want.ReceivedAt) {
		t.Errorf("stored received time %v, want %v", got.ReceivedAt, want.ReceivedAt)
	}
}

func trim(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// TestVerifySizeLimits proves the body limits (endpoint and ceiling, checked before the
// signature), that a 25 MiB GitHub delivery passes the real gRPC server once the endpoint
// allows it, and that oversized header sets and an empty endpoint id are caller errors.
func TestVerifySizeLimits(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := githubProvider
		secret, _ := e.setup(t, p, "gh")
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "tiny", Provider: "github", MaxBodyBytes: 1024})
		tinySecret := p.newSecret()
		e.addSecret(t, "tiny", tinySecret)
		body := func(n int) []byte { return bytes.Repeat([]byte{'a'}, n) }

		t.Run("endpoint limit", func(t *testing.T) {
			tests := []struct {
				name   string
				size   int
				secret string
				want   hookverifyv1.RejectReason
			}{
				{"at the limit", 1024, tinySecret, noReason},
				{"one byte above", 1025, tinySecret, bodyTooLarge},
				{"one byte above, forged", 1025, p.newSecret(), bodyTooLarge},
				{"far above, forged", 1 << 20, p.newSecret(), bodyTooLarge},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					req := sign(t, p, "tiny", eventID(p), body(tt.size), e.clock.Now(), tt.secret)
					if tt.want == noReason {
						e.accept(t, req)
					} else {
						e.reject(t, req, tt.want)
					}
				})
			}
		})
		t.Run("default limit of 1 MiB", func(t *testing.T) {
			e.accept(t, sign(t, p, "gh", eventID(p), body(server.DefaultMaxBodyBytes), e.clock.Now(), secret))
			e.reject(t, sign(t, p, "gh", eventID(p), body(server.DefaultMaxBodyBytes+1), e.clock.Now(), secret), bodyTooLarge)
		})
		t.Run("25 MiB GitHub delivery", func(t *testing.T) {
			_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "gh", MaxBodyBytes: 25 << 20}})
			if err != nil {
				t.Fatalf("UpdateEndpoint: %v", err)
			}
			large := make([]byte, 25<<20)
			for i := range large {
				large[i] = alnum[i%len(alnum)]
			}
			req := sign(t, p, "gh", eventID(p), large, e.clock.Now(), secret)
			resp := e.accept(t, req, grpc.MaxCallSendMsgSize(server.MaxRecvMsgSize))
			d, err := e.store.GetDelivery(t.Context(), resp.GetInboxId())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.Body, large) {
				t.Fatalf("stored body of %d bytes differs from the 25 MiB sent", len(d.Body))
			}
		})

		t.Run("invalid requests", func(t *testing.T) {
			valid := sign(t, p, "gh", eventID(p), body(10), e.clock.Now(), secret)
			many := func(n, valueSize int) *hookverifyv1.VerifyRequest {
				req := withoutHeaders(valid)
				for len(req.Headers) < n {
					req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: "X-Filler", Value: strings.Repeat("v", valueSize)})
				}
				return req
			}
			tests := []struct {
				name    string
				req     *hookverifyv1.VerifyRequest
				message string // part of the status message
			}{
				{"empty endpoint id", &hookverifyv1.VerifyRequest{Body: body(10), Headers: valid.GetHeaders()}, "endpoint_id"},
				{"more than MaxHeaderCount headers", many(server.MaxHeaderCount+1, 1), "headers"},
				{"more than MaxHeaderBytes of headers", many(20, server.MaxHeaderBytes/10), "bytes"},
				// An edge that leaves the method or the URL out, or sends only the path, hears
				// that it is misconfigured rather than see URL-signing providers' deliveries
				// rejected as forged.
				{"no method", withRequest(valid, func(r *hookverifyv1.VerifyRequest) { r.Method = "" }), "method"},
				{"no url", withRequest(valid, func(r *hookverifyv1.VerifyRequest) { r.Url = "" }), "url"},
				{"a path for the url", withRequest(valid, func(r *hookverifyv1.VerifyRequest) { r.Url = "/hooks/gh" }), "url"},
				{"a url of another scheme", withRequest(valid, func(r *hookverifyv1.VerifyRequest) { r.Url = "ftp://hooks.example.com/gh" }), "url"},
				{"a url without a host", withRequest(valid, func(r *hookverifyv1.VerifyRequest) { r.Url = "https:///gh" }), "url"},
				// "ſ" folds to "s" in Unicode, not in a URL scheme.
				{"a url whose scheme imitates https", withRequest(valid, func(r *hookverifyv1.VerifyRequest) { r.Url = "http\u017F://hooks.example.com/gh" }), "url"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := e.call(t, tt.req)
					wantCode(t, err, codes.InvalidArgument)
					if msg := status.Convert(err).Message(); !strings.Contains(msg, tt.message) {
						t.Fatalf("message %q does not mention %q", msg, tt.message)
					}
				})
			}
			// The limits themselves are allowed, and a scheme in capitals.
			e.accept(t, many(server.MaxHeaderCount, 1))
			e.accept(t, withRequest(sign(t, p, "gh", eventID(p), body(10), e.clock.Now(), secret), func(r *hookverifyv1.VerifyRequest) {
				r.Url = "HTTPS://hooks.example.com/gh"
			}))
		})
	})
}

// TestVerifyHTTPReply proves that the reply the edge forwards says 2xx for ACCEPTED and
// DUPLICATE and a 4xx for every rejection (every answer in the suite is also checked by
// checkReply).
func TestVerifyHTTPReply(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "off", Provider: "stripe", Disabled: true})
		id := eventID(p)
		real := e.deliver(t, p, "shop", id, secret)
		tests := []struct {
			name    string
			req     *hookverifyv1.VerifyRequest
			verdict hookverifyv1.Verdict
			status  int32
		}{
			{"accepted", real, accepted, 200},
			{"duplicate", real, duplicate, 200},
			{"unknown endpoint", withEndpoint(real, "nope"), rejected, 400},
			{"disabled", e.deliver(t, p, "off", id, secret), rejected, 403},
			{"forged", e.deliver(t, p, "shop", id, p.newSecret()), rejected, 401},
			{"unsigned", withoutHeaders(real, stripeSigHeader), rejected, 401},
			{"stale", sign(t, p, "shop", "", p.body(id), e.clock.Now().Add(-time.Hour), secret), rejected, 401},
			{"no event id", sign(t, p, "shop", "", []byte(`{}`), e.clock.Now(), secret), rejected, 400},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp := e.verify(t, tt.req)
				if resp.GetVerdict() != tt.verdict || resp.GetReply().GetStatus() != tt.status {
					t.Fatalf("%s with HTTP %d (%s), want %s with HTTP %d", resp.GetVerdict(), resp.GetReply().GetStatus(), resp.GetDetail(), tt.verdict, tt.status)
				}
				var doc map[string]string
				if err := json.Unmarshal(resp.GetReply().GetBody(), &doc); err != nil {
					t.Fatalf("reply body %q is not a JSON object: %v", resp.GetReply().GetBody(), err)
				}
				if doc["status"] == "" {
					t.Fatalf("reply body %q has no status", resp.GetReply().GetBody())
				}
			})
		}
	})
}

// TestVerifyImpossibleEndpointIDsAreUnknown: the endpoint id comes from the URL the provider
// (or anyone) called, so an id no endpoint can have is that caller's mistake, not the edge's.
// Every such id, whatever makes it impossible (a character outside the id alphabet, NUL, or
// its length), gets the same answer as an id that is merely not configured: REJECTED
// UNKNOWN_ENDPOINT (400, see TestUnknownEndpointIsNot404), nothing recorded. An overlong one used to be INVALID_ARGUMENT, which
// edges turn into a 500 and an "edge misconfigured" error log that any caller could trigger.
func TestVerifyImpossibleEndpointIDsAreUnknown(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")
		for _, id := range []string{
			"nope",
			"a b",
			"shop\x00",
			strings.Repeat("a", 129),
			strings.Repeat("shop", 64<<10),
		} {
			resp := e.reject(t, withEndpoint(e.deliver(t, p, "shop", eventID(p), secret), id), unknownEndpoint)
			if got := resp.GetReply().GetStatus(); got != 400 {
				t.Errorf("id of %d bytes: HTTP %d, want 400", len(id), got)
			}
		}
		if n := e.count(t); n != 0 {
			t.Fatalf("%d inbox records after rejections only, want 0", n)
		}
	})
}

// headerIDProtocol is a test protocol that authenticates every delivery with the first key and
// takes the event id verbatim from the X-Event-Id header, empty included: a protocol (built in
// or a caller's own, Options.Protocols) that lets an empty identity through.
func headerIDProtocol() *protocol.Protocol {
	return &protocol.Protocol{
		Name: "header-id-test", DisplayName: "Header id", SignatureScheme: "none", IdentitySource: "X-Event-Id", DocsURL: "https://example.com",
		ParseSecret: func(s string) ([]byte, error) { return []byte(s), nil },
		Verify: func(req *protocol.Request, keys []protocol.Key, _ protocol.Params) (protocol.Result, error) {
			id, _ := req.Headers.Get("X-Event-Id")
			return protocol.Result{KeyID: keys[0].ID, EventID: id}, nil
		},
		Sign:          func(protocol.SignInput, []string) (protocol.Headers, error) { return nil, nil },
		ExampleSecret: func() (string, string, error) { return "s", "s", nil },
	}
}

// TestVerifyEmptyEventIDIsMissing: an authenticated delivery whose identity is empty is
// REJECTED MISSING_EVENT_ID, as the proto documents. Claimed under "", it would make every
// later delivery of the scope without an id a DUPLICATE of the first (SQLite), or fail the
// claim and be answered INVALID_ARGUMENT, which edges turn into 500 (PostgreSQL).
func TestVerifyEmptyEventIDIsMissing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		registry, err := protocol.NewRegistry(headerIDProtocol())
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, b)
		e.options = func(o *server.Options) { o.Protocols = registry }
		in := e.start(t, e.store)
		in.createEndpoint(t, &hookverifyv1.Endpoint{Id: "hid", Provider: "header-id-test"})
		in.addSecret(t, "hid", "s")

		for _, body := range []string{`{"n":1}`, `{"n":2}`} {
			req := &hookverifyv1.VerifyRequest{EndpointId: "hid", Method: "POST", Url: "https://hooks.example.com/hid", Body: []byte(body),
				Headers: []*hookverifyv1.HeaderField{{Name: "X-Event-Id", Value: ""}}}
			in.reject(t, req, missingEventID)
		}
		if n := e.count(t); n != 0 {
			t.Fatalf("%d deliveries stored for rejected ones", n)
		}
		in.accept(t, &hookverifyv1.VerifyRequest{EndpointId: "hid", Method: "POST", Url: "https://hooks.example.com/hid", Body: []byte(`{}`),
			Headers: []*hookverifyv1.HeaderField{{Name: "x-event-id", Value: "evt_1"}}})
	})
}

// failingProtocol is a test protocol whose verification fails with an error that is not a
// rejection: what a protocol bug looks like to the server.
func failingProtocol() *protocol.Protocol {
	p := headerIDProtocol()
	p.Name = "failing-test"
	p.Verify = func(*protocol.Request, []protocol.Key, protocol.Params) (protocol.Result, error) {
		return protocol.Result{}, errors.New("boom")
	}
	return p
}

// verifyRPCComment returns the comment above `rpc Verify` in verifier.proto: what an edge
// written in another language learns of Verify's failures.
func verifyRPCComment(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "proto", "hookverify", "v1", "verifier.proto"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(strings.TrimSpace(line), "rpc Verify(") {
			continue
		}
		var comment []string
		for j := i - 1; j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "//"); j-- {
			comment = append([]string{strings.TrimSpace(lines[j])}, comment...)
		}
		return strings.Join(comment, "\n")
	}
	t.Fatal("no rpc Verify in verifier.proto")
	return ""
}

// TestVerifyProtoDocumentsEveryStatus: every gRPC status Verify answers instead of a verdict
// is named in the proto's comment on Verify, so that an edge written from the proto alone
// knows which ones mean "tell the provider to retry" (503) and which mean "the edge or the
// server is misconfigured". Each code is produced here by the server itself.
func TestVerifyProtoDocumentsEveryStatus(t *testing.T) {
	t.Parallel()
	b := backends[0]
	registry, err := protocol.NewRegistry(protocol.GitHub(), headerIDProtocol(), failingProtocol())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, b)
	e.options = func(o *server.Options) {
		o.Protocols = registry
		o.MaxPendingTotal = 1
	}
	in := e.start(t, e.store)
	in.createEndpoint(t, &hookverifyv1.Endpoint{Id: "hid", Provider: "header-id-test"})
	in.addSecret(t, "hid", "s")
	in.createEndpoint(t, &hookverifyv1.Endpoint{Id: "fail", Provider: "failing-test"})
	in.addSecret(t, "fail", "s")
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "stripe", Provider: "stripe"}) // not in the test registry
	delivery := func(endpoint, id string) *hookverifyv1.VerifyRequest {
		return &hookverifyv1.VerifyRequest{EndpointId: endpoint, Method: "POST", Url: "https://hooks.example.com/" + endpoint, Body: []byte(`{}`),
			Headers: []*hookverifyv1.HeaderField{{Name: "X-Event-Id", Value: id}}}
	}

	got := map[codes.Code]bool{}
	note := func(err error) {
		t.Helper()
		if err == nil {
			t.Fatal("Verify answered a verdict, want a gRPC status")
		}
		got[status.Code(err)] = true
	}
	_, err = in.call(t, &hookverifyv1.VerifyRequest{}) // no endpoint id
	note(err)
	_, err = in.call(t, delivery("fail", "a")) // the protocol failed
	note(err)
	_, err = in.call(t, delivery("stripe", "a")) // a provider this server does not have
	note(err)
	huge := delivery("hid", "a")
	huge.Body = make([]byte, server.MaxRecvMsgSize) // refused by gRPC before Verify runs
	_, err = in.call(t, huge, grpc.MaxCallSendMsgSize(2*server.MaxRecvMsgSize))
	note(err)
	if _, hinted := retryHint(err); hinted {
		t.Errorf("the refusal of a message above the receive limit carries RetryInfo: %v", err)
	}
	in.accept(t, delivery("hid", "first"))
	in.srv.RefreshInboxDepth(t.Context())          // the inbox now holds MaxPendingTotal
	_, err = in.call(t, delivery("hid", "second")) // backpressure
	note(err)
	if _, hinted := retryHint(err); status.Code(err) != codes.ResourceExhausted || !hinted {
		t.Errorf("backpressure answered %v, want RESOURCE_EXHAUSTED with RetryInfo", err)
	}
	in.srv.SetStore(nil) // storage gone
	_, err = in.call(t, delivery("hid", "third"))
	note(err)

	comment := verifyRPCComment(t)
	for code := range got {
		name := canonicalCode(code)
		if !strings.Contains(comment, name) {
			t.Errorf("Verify answers %s, which the proto's comment on Verify does not mention:\n%s", name, comment)
		}
	}
	if len(got) < 5 {
		t.Errorf("only %v produced", got)
	}
}

// canonicalCode is the name of a gRPC code as the gRPC specification (and so the proto)
// spells it: RESOURCE_EXHAUSTED, where codes.Code.String says ResourceExhausted.
func canonicalCode(c codes.Code) string {
	if c == codes.Canceled {
		return "CANCELLED"
	}
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// retryHint returns the delay of err's google.rpc.RetryInfo detail, and whether it has one:
// what tells an edge hookverify's backpressure from gRPC refusing a message above its receive
// limit, both RESOURCE_EXHAUSTED.
func retryHint(err error) (time.Duration, bool) {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// withRequest returns a copy of req changed by change.
func withRequest(req *hookverifyv1.VerifyRequest, change func(*hookverifyv1.VerifyRequest)) *hookverifyv1.VerifyRequest {
	out := proto.CloneOf(req)
	change(out)
	return out
}
