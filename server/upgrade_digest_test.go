package server_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// TestVerifyTokenWrittenByAnOlderInstanceIsNeverShown: during a rolling upgrade, an instance
// of a release before credential digests, still serving, writes a Meta endpoint with its
// verify_token as given, after this instance's start-up rewrite (DigestStoredCredentialOptions)
// has run. Until the next restart that token sits in the database in plain text; this
// instance must still never answer it (GetEndpoint, ListEndpoints, UpdateEndpoint) nor write
// it to the audit trail when it updates the endpoint, and must keep authenticating with it.
func TestVerifyTokenWrittenByAnOlderInstanceIsNeverShown(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		const token = "meta-legacy-token-5d1f09a2"
		if n, err := e.srv.DigestStoredCredentialOptions(t.Context(), e.store); err != nil || n != 0 {
			t.Fatalf("start-up rewrite on an empty database: %d, %v", n, err)
		}
		// Written by the older instance, as it stored options: as given.
		legacy := storage.Endpoint{ID: "meta-old", Provider: "meta", DedupeScope: "meta-old", TimestampTolerance: 5 * time.Minute,
			MaxBodyBytes: server.DefaultMaxBodyBytes, Options: map[string]string{"verify_token": token}, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
		if err := e.store.CreateEndpoint(t.Context(), legacy); err != nil {
			t.Fatal(err)
		}
		handshake := func(presented string) *hookverifyv1.VerifyResponse {
			return e.verify(t, &hookverifyv1.VerifyRequest{EndpointId: "meta-old", Method: "GET",
				Url: "https://hooks.example.com/meta-old?hub.mode=subscribe&hub.challenge=31337&hub.verify_token=" + url.QueryEscape(presented)})
		}

		got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "meta-old"})
		if err != nil {
			t.Fatal(err)
		}
		if v := got.GetEndpoint().GetOptions()["verify_token"]; strings.Contains(v, token) || !strings.HasPrefix(v, "sha256-salted:") {
			t.Errorf("GetEndpoint answers verify_token %q, want a digest", v)
		}
		list, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(list.String(), token) {
			t.Error("ListEndpoints shows the token")
		}

		// An update of another setting, made from that read (the CLI's endpoint update).
		in := got.GetEndpoint()
		in.Disabled = true
		updated, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: in})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(updated.String(), token) {
			t.Error("UpdateEndpoint answers the token")
		}
		stored, err := e.store.GetEndpoint(t.Context(), "meta-old")
		if err != nil {
			t.Fatal(err)
		}
		if v := stored.Options["verify_token"]; strings.Contains(v, token) || !strings.HasPrefix(v, "sha256-salted:") {
			t.Errorf("after the update the stored verify_token is %q, want a digest", v)
		}
		events, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.GetEvents() {
			if strings.Contains(ev.GetDetail(), token) {
				t.Errorf("audit event %s %s holds the token: %s", ev.GetAction(), ev.GetEndpointId(), ev.GetDetail())
			}
		}
		if strings.Contains(string(e.transcript.Bytes()), token) || strings.Contains(string(e.logs.Bytes()), token) {
			t.Error("a caller or the log saw the token")
		}

		// The token still authenticates the subscription GET, a wrong one does not.
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "meta-old", Options: updated.GetEndpoint().GetOptions()}}); err != nil {
			t.Fatal(err)
		}
		if resp := handshake(token); resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || string(resp.GetReply().GetBody()) != "31337" {
			t.Fatalf("the subscription GET got %v %v %q, want the challenge echoed", resp.GetVerdict(), resp.GetRejectReason(), resp.GetReply().GetBody())
		}
		if resp := handshake(token + "x"); resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH {
			t.Fatalf("a wrong token got %v %v", resp.GetVerdict(), resp.GetRejectReason())
		}
	})
}
