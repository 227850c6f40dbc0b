package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// TestAuditTrail: every admin action leaves one record naming who, what, when, which endpoint
// and secret, filterable by endpoint and time.
func TestAuditTrail(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := githubProvider
		start := e.clock.Now()
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "audited", Provider: p.name})
		e.clock.Advance(time.Second)
		firstID := e.addSecret(t, "audited", p.newSecret())
		e.clock.Advance(time.Second)
		rotated, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "audited",
			Secret: p.newSecret(), Overlap: durationpb.New(time.Hour)})
		if err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		e.clock.Advance(time.Second)
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "audited", SecretId: firstID}); err != nil {
			t.Fatalf("RetireSecret: %v", err)
		}
		e.clock.Advance(time.Second)
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "audited", Disabled: true}}); err != nil {
			t.Fatalf("UpdateEndpoint: %v", err)
		}
		e.clock.Advance(time.Second)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "other", Provider: p.name})
		// Refused and read-only calls record nothing.
		_, err = e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "missing", Secret: p.newSecret()})
		wantCode(t, err, codes.NotFound)
		if _, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "audited"}); err != nil {
			t.Fatal(err)
		}

		list := func(req *hookverifyv1.ListAuditEventsRequest) []*hookverifyv1.AuditEvent {
			t.Helper()
			resp, err := e.admin.ListAuditEvents(t.Context(), req)
			if err != nil {
				t.Fatalf("ListAuditEvents: %v", err)
			}
			return resp.GetEvents()
		}
		type row struct{ action, endpoint, secret string }
		rows := func(events []*hookverifyv1.AuditEvent) []row {
			var out []row
			for _, ev := range events {
				out = append(out, row{ev.GetAction(), ev.GetEndpointId(), ev.GetSecretId()})
			}
			return out
		}
		all := list(&hookverifyv1.ListAuditEventsRequest{})
		want := []row{
			{"endpoint.create", "audited", ""},
			{"secret.add", "audited", firstID},
			{"secret.rotate", "audited", rotated.GetSecret().GetId()},
			{"secret.retire", "audited", firstID},
			{"endpoint.update", "audited", ""},
			{"endpoint.create", "other", ""},
		}
		if got := rows(all); !slices.Equal(got, want) {
			t.Fatalf("audit events %v, want %v", got, want)
		}
		for i, ev := range all {
			if ev.GetActor() != server.LocalPrincipal.Name || ev.GetId() == "" || ev.GetTime() == nil {
				t.Errorf("event %d: actor %q, id %q, time %v; want the local principal, an id and a time", i, ev.GetActor(), ev.GetId(), ev.GetTime())
			}
		}
		if !all[0].GetTime().AsTime().Equal(start) || !strings.Contains(all[0].GetDetail(), "provider=github") {
			t.Errorf("create event %v: want the time of the call and the provider", all[0])
		}
		if d := all[2].GetDetail(); !strings.Contains(d, "fingerprint="+rotated.GetSecret().GetFingerprint()) || !strings.Contains(d, "overlap 1h0m0s") {
			t.Errorf("rotate event detail %q: want the new fingerprint and the overlap", d)
		}
		if d := all[4].GetDetail(); d != "disabled: false -> true" {
			t.Errorf("update event detail %q, want the one change", d)
		}

		if got := rows(list(&hookverifyv1.ListAuditEventsRequest{EndpointId: "other"})); !slices.Equal(got, want[5:]) {
			t.Errorf("events of other: %v", got)
		}
		window := list(&hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(start.Add(time.Second)),
			EndTime: timestamppb.New(start.Add(3 * time.Second))})
		if got := rows(window); !slices.Equal(got, want[1:3]) {
			t.Errorf("events in [1s, 3s): %v, want %v", got, want[1:3])
		}
		if got := rows(list(&hookverifyv1.ListAuditEventsRequest{PageSize: 2})); !slices.Equal(got, want[:2]) {
			t.Errorf("first page of 2: %v", got)
		}
		// Over the maximum is the maximum (AIP-158), negative a mistake.
		if got := rows(list(&hookverifyv1.ListAuditEventsRequest{PageSize: 5000})); !slices.Equal(got, want) {
			t.Errorf("page_size 5000: %v, want every event", got)
		}
		_, err = e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: -1})
		wantCode(t, err, codes.InvalidArgument)
	})
}

// TestSecretUsageAndFingerprints: a secret shows a fingerprint anyone holding it can compute,
// and when it last authenticated a delivery, written about once a minute, not per delivery;
// a metric counts verifications per endpoint and secret.
func TestSecretUsageAndFingerprints(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e := newEnvWith(t, b, func(o *server.Options) { o.Metrics = metrics })
		p := githubProvider
		secret, id := e.setup(t, p, "used")
		lastUsed := func() *hookverifyv1.SecretInfo {
			t.Helper()
			if err := e.srv.FlushSecretUses(t.Context()); err != nil {
				t.Fatalf("FlushSecretUses: %v", err)
			}
			resp, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "used"})
			if err != nil || len(resp.GetSecrets()) != 1 {
				t.Fatalf("ListSecrets = %v, %v", resp, err)
			}
			return resp.GetSecrets()[0]
		}
		info := lastUsed()
		if info.GetLastUsedTime() != nil {
			t.Fatalf("unused secret has a last use: %v", info)
		}
		if want := secretbox.Fingerprint("used", []byte(secret)); info.GetFingerprint() != want {
			t.Fatalf("fingerprint %q, want %q", info.GetFingerprint(), want)
		}
		if info.GetMasterKeyId() != e.keyring.CurrentKeyID() {
			t.Fatalf("master key id %q, want %q", info.GetMasterKeyId(), e.keyring.CurrentKeyID())
		}

		first := e.clock.Now()
		e.accept(t, e.deliver(t, p, "used", eventID(p), secret))
		e.reject(t, e.deliver(t, p, "used", eventID(p), p.newSecret()), mismatch) // no use
		if got := lastUsed().GetLastUsedTime(); got == nil || !got.AsTime().Equal(first) {
			t.Fatalf("last use %v, want %v", got, first)
		}
		e.clock.Advance(30 * time.Second) // within the resolution: not written again
		e.accept(t, e.deliver(t, p, "used", eventID(p), secret))
		if got := lastUsed().GetLastUsedTime(); !got.AsTime().Equal(first) {
			t.Fatalf("last use %v after a use within a minute, want still %v", got.AsTime(), first)
		}
		e.clock.Advance(31 * time.Second)
		e.accept(t, e.deliver(t, p, "used", eventID(p), secret))
		if got := lastUsed().GetLastUsedTime(); !got.AsTime().Equal(e.clock.Now()) {
			t.Fatalf("last use %v a minute later, want %v", got.AsTime(), e.clock.Now())
		}

		wantMetrics(t, e.srv, `hookverify_secret_verifications_total{endpoint="used",secret_id="`+id+`"} 3`)
	})
}

// TestRekeyWhileServing: master-key rotation. A server holding the new key (current) and the
// old one keeps verifying while RekeySecrets moves every secret, in pages; afterwards a server
// holding only the new key verifies everything, and each reseal is in the audit trail.
func TestRekeyWhileServing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := githubProvider
		var secrets []string
		for _, ep := range []string{"rk-1", "rk-2"} {
			s1, _ := e.setup(t, p, ep)
			s2 := p.newSecret()
			e.addSecret(t, ep, s2)
			secrets = append(secrets, s1, s2)
		}
		oldKey := e.masterKey
		newKey := mustKey(t)
		var err error
		if e.keyring, err = secretbox.NewKeyring(newKey, oldKey); err != nil {
			t.Fatal(err)
		}
		both := e.start(t, e.store)
		// A secret under a key nobody holds any more is reported, never dropped: one in force
		// as unreadable, one retired as ended (it needs nothing, and must not hold the rotation
		// up for ever, since nothing can reseal it).
		lost, err := secretbox.NewKeyring(mustKey(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range []storage.Secret{{ID: "sec_lost", RetiredAt: e.clock.Now()}, {ID: "sec_lost_live"}} {
			sec.EndpointID, sec.CreatedAt = "rk-2", e.clock.Now()
			sec.KeyID, sec.Sealed, _ = lost.Seal("rk-2", sec.ID, []byte(p.newSecret()))
			if err := e.store.AddSecret(t.Context(), sec, nil); err != nil {
				t.Fatal(err)
			}
		}

		var resealed int32
		for round := 0; ; round++ {
			resp, err := both.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{MaxSecrets: 3})
			if err != nil {
				t.Fatalf("RekeySecrets: %v", err)
			}
			if resp.GetCurrentKeyId() != secretbox.KeyID(newKey) {
				t.Fatalf("RekeySecrets = %v: want the new key id", resp)
			}
			resealed += resp.GetResealed()
			// Verification goes on during the rekey.
			both.accept(t, e.deliver(t, p, "rk-1", eventID(p), secrets[round%2]))
			if resp.GetRemaining() == 0 {
				// The last call reaches every secret left, the unreadable ones included.
				if !slices.Equal(resp.GetUnreadableSecretIds(), []string{"sec_lost_live"}) || !slices.Equal(resp.GetEndedUnreadableSecretIds(), []string{"sec_lost"}) {
					t.Fatalf("last RekeySecrets = %v: want sec_lost_live reported unreadable and sec_lost ended", resp)
				}
				break
			}
			if round > 5 {
				t.Fatalf("rekey does not finish: %v", resp)
			}
		}
		if resealed != 4 {
			t.Fatalf("resealed %d secrets, want 4", resealed)
		}

		if e.keyring, err = secretbox.NewKeyring(newKey); err != nil {
			t.Fatal(err)
		}
		onlyNew := e.start(t, e.store)
		for i, secret := range secrets {
			onlyNew.accept(t, e.deliver(t, p, []string{"rk-1", "rk-2"}[i/2], eventID(p), secret))
		}
		listed, err := onlyNew.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "rk-1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range listed.GetSecrets() {
			if sec.GetMasterKeyId() != secretbox.KeyID(newKey) {
				t.Errorf("secret %s still under %s", sec.GetId(), sec.GetMasterKeyId())
			}
		}
		audit, err := onlyNew.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var rekeys int
		for _, ev := range audit.GetEvents() {
			if ev.GetAction() == "secret.rekey" {
				rekeys++
				if ev.GetDetail() != secretbox.KeyID(oldKey)+" -> "+secretbox.KeyID(newKey) {
					t.Errorf("rekey detail %q", ev.GetDetail())
				}
			}
		}
		if rekeys != 4 {
			t.Errorf("%d rekey audit events, want 4", rekeys)
		}
		_, err = both.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{MaxSecrets: -1})
		wantCode(t, err, codes.InvalidArgument)
	})
}

// TestRekeyNamesADamagedSecret: a secret whose sealed material no longer opens under an old
// master key the server holds is reported unreadable, as one under a key not given; the CLI's
// advice for that (restart with the key) cannot help, so the server's log names it as damaged.
func TestRekeyNamesADamagedSecret(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.setup(t, githubProvider, "dmg")
		oldKey := e.masterKey
		old, err := secretbox.NewKeyring(oldKey)
		if err != nil {
			t.Fatal(err)
		}
		sec := storage.Secret{ID: "sec_damaged", EndpointID: "dmg", CreatedAt: e.clock.Now()}
		sec.KeyID, sec.Sealed, _ = old.Seal("dmg", sec.ID, []byte(githubProvider.newSecret()))
		sec.Sealed[len(sec.Sealed)-1] ^= 1
		if err := e.store.AddSecret(t.Context(), sec, nil); err != nil {
			t.Fatal(err)
		}
		if e.keyring, err = secretbox.NewKeyring(mustKey(t), oldKey); err != nil {
			t.Fatal(err)
		}
		both := e.start(t, e.store)
		resp, err := both.admin.RekeySecrets(t.Context(), &hookverifyv1.RekeySecretsRequest{MaxSecrets: 10})
		if err != nil || !slices.Equal(resp.GetUnreadableSecretIds(), []string{"sec_damaged"}) || resp.GetResealed() != 1 {
			t.Fatalf("RekeySecrets = %v, %v; want the good secret resealed and sec_damaged unreadable", resp, err)
		}
		logs := string(e.logs.Bytes())
		if !strings.Contains(logs, "damaged or altered") || !strings.Contains(logs, `"secret_id":"sec_damaged"`) {
			t.Errorf("the log does not name sec_damaged as damaged:\n%s", logs)
		}
	})
}

// TestUnsignedChallengeIsNoSecretUse: Braintree's GET ?bt_challenge= is answered under the
// endpoint's first key, but Braintree does not sign it, so anyone can send one. It counted as a
// use of that secret (its last_used_time, its verifications metric): a stranger could keep an
// old secret looking in use through a rotation, where retire warns of recent use.
func TestUnsignedChallengeIsNoSecretUse(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e := newEnvWith(t, b, func(o *server.Options) { o.Metrics = metrics })
		p, _ := protocol.Default().Lookup("braintree")
		_, verifying, err := p.ExampleSecret()
		if err != nil {
			t.Fatal(err)
		}
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "bt", Provider: p.Name})
		id := e.addSecret(t, "bt", verifying)
		resp := e.verify(t, &hookverifyv1.VerifyRequest{EndpointId: "bt", Method: "GET", Url: "https://hooks.example.com/bt?bt_challenge=" + strings.Repeat("ab", 12)})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || resp.GetReply().GetStatus() != 200 || resp.GetSecretId() != "" {
			t.Fatalf("challenge: %v; want HANDSHAKE answered, naming no secret", resp)
		}
		if err := e.srv.FlushSecretUses(t.Context()); err != nil {
			t.Fatal(err)
		}
		list, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "bt"})
		if err != nil || len(list.GetSecrets()) != 1 || list.GetSecrets()[0].GetLastUsedTime() != nil {
			t.Fatalf("after an unsigned challenge: %v, %v; want %s never used", list, err, id)
		}
		wantMetrics(t, e.srv, `hookverify_secret_verifications_total{endpoint="bt",secret_id="`+id+`"} 0`)
	})
}
