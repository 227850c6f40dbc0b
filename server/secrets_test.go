package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

const (
	stateScheduled = hookverifyv1.SecretState_SECRET_STATE_SCHEDULED
	stateActive    = hookverifyv1.SecretState_SECRET_STATE_ACTIVE
	stateExpiring  = hookverifyv1.SecretState_SECRET_STATE_EXPIRING
	stateRetired   = hookverifyv1.SecretState_SECRET_STATE_RETIRED
)

// TestSecretLifecycle proves, for every protocol, that a secret authenticates exactly while it
// is valid — retirement, not_after, not_before and rotation with overlap, judged by the
// injected clock — and that secret_id names the secret that matched.
func TestSecretLifecycle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, p := range providers {
			// acceptedBy sends a new event signed with secret and wants it accepted by secretID.
			acceptedBy := func(t *testing.T, endpoint, secret, secretID string) {
				t.Helper()
				resp := e.accept(t, e.deliver(t, p, endpoint, eventID(p), secret))
				if resp.GetSecretId() != secretID {
					t.Fatalf("secret_id %s, want %s", resp.GetSecretId(), secretID)
				}
			}
			refused := func(t *testing.T, endpoint, secret string) {
				t.Helper()
				e.reject(t, e.deliver(t, p, endpoint, eventID(p), secret), mismatch)
			}
			// unverifiable: with no secret valid now a signature can be neither checked nor
			// refuted, and the provider is told to retry (TestEndpointWithoutAValidSecretIsUnavailable).
			unverifiable := func(t *testing.T, endpoint, secret string) {
				t.Helper()
				_, err := e.call(t, e.deliver(t, p, endpoint, eventID(p), secret))
				wantCode(t, err, codes.Unavailable)
			}

			t.Run(p.name+"/retire", func(t *testing.T) {
				endpoint := "retire-" + p.name
				a, aID := e.setup(t, p, endpoint)
				b := p.newSecret()
				bID := e.addSecret(t, endpoint, b)
				acceptedBy(t, endpoint, a, aID)
				acceptedBy(t, endpoint, b, bID)

				resp, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: endpoint, SecretId: aID})
				if err != nil {
					t.Fatalf("RetireSecret: %v", err)
				}
				if got := resp.GetSecret(); got.GetState() != stateRetired || !got.GetRetireTime().AsTime().Equal(e.clock.Now()) {
					t.Fatalf("retired secret is %s retired at %v, want RETIRED at %v", got.GetState(), got.GetRetireTime().AsTime(), e.clock.Now())
				}
				refused(t, endpoint, a)
				acceptedBy(t, endpoint, b, bID)

				if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: endpoint, SecretId: bID}); err != nil {
					t.Fatalf("RetireSecret: %v", err)
				}
				unverifiable(t, endpoint, b)
			})

			t.Run(p.name+"/not_after", func(t *testing.T) {
				endpoint := "until-" + p.name
				e.createEndpoint(t, &hookverifyv1.Endpoint{Id: endpoint, Provider: p.name})
				secret := p.newSecret()
				end := e.clock.Now().Add(time.Hour)
				resp, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: endpoint, Secret: secret, NotAfter: timestamppb.New(end)})
				if err != nil {
					t.Fatalf("AddSecret: %v", err)
				}
				id := resp.GetSecret().GetId()
				if resp.GetSecret().GetState() != stateExpiring {
					t.Fatalf("state %s, want EXPIRING", resp.GetSecret().GetState())
				}
				acceptedBy(t, endpoint, secret, id)
				e.clock.Advance(time.Hour - time.Second)
				acceptedBy(t, endpoint, secret, id)
				e.clock.Advance(time.Second) // now == not_after: no longer valid
				unverifiable(t, endpoint, secret)
				wantStates(t, e, endpoint, stateRetired)
			})

			t.Run(p.name+"/not_before", func(t *testing.T) {
				endpoint := "from-" + p.name
				e.createEndpoint(t, &hookverifyv1.Endpoint{Id: endpoint, Provider: p.name})
				secret := p.newSecret()
				start := e.clock.Now().Add(time.Hour)
				resp, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: endpoint, Secret: secret, NotBefore: timestamppb.New(start)})
				if err != nil {
					t.Fatalf("AddSecret: %v", err)
				}
				id := resp.GetSecret().GetId()
				if resp.GetSecret().GetState() != stateScheduled {
					t.Fatalf("state %s, want SCHEDULED", resp.GetSecret().GetState())
				}
				unverifiable(t, endpoint, secret)
				e.clock.Advance(time.Hour - time.Second)
				unverifiable(t, endpoint, secret)
				e.clock.Advance(time.Second) // now == not_before: valid
				acceptedBy(t, endpoint, secret, id)
				wantStates(t, e, endpoint, stateActive)
			})

			t.Run(p.name+"/rotate with overlap", func(t *testing.T) {
				endpoint := "rotate-" + p.name
				old, oldID := e.setup(t, p, endpoint)
				acceptedBy(t, endpoint, old, oldID)

				fresh := p.newSecret()
				e.clock.Advance(time.Second) // so that ListSecrets' oldest-first order is known
				rotatedAt := e.clock.Now()
				resp, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{
					EndpointId: endpoint, Secret: fresh, Overlap: durationpb.New(24 * time.Hour),
				})
				if err != nil {
					t.Fatalf("RotateSecret: %v", err)
				}
				freshID := resp.GetSecret().GetId()
				if resp.GetSecret().GetState() != stateActive || freshID == oldID {
					t.Fatalf("new secret %s is %s, want a new ACTIVE secret", freshID, resp.GetSecret().GetState())
				}
				if len(resp.GetPrevious()) != 1 {
					t.Fatalf("previous = %v, want the one old secret", resp.GetPrevious())
				}
				prev := resp.GetPrevious()[0]
				if prev.GetId() != oldID || prev.GetState() != stateExpiring || !prev.GetNotAfter().AsTime().Equal(rotatedAt.Add(24*time.Hour)) {
					t.Fatalf("previous = %s %s until %v, want %s EXPIRING until %v", prev.GetId(), prev.GetState(), prev.GetNotAfter().AsTime(), oldID, rotatedAt.Add(24*time.Hour))
				}

				// Inside the overlap both work, whichever the provider signs with.
				acceptedBy(t, endpoint, old, oldID)
				acceptedBy(t, endpoint, fresh, freshID)
				// A delivery signed with both (Stripe and Standard Webhooks send one signature
				// per secret while a rolled secret lives on) is credited to the new one, so that
				// the runbook's signal, the old secret's last use no longer moving, comes as soon
				// as the provider signs with the new secret, not when it stops signing with the old.
				if p.name != githubProvider.name { // GitHub sends one signature
					resp := e.accept(t, e.deliver(t, p, endpoint, eventID(p), old, fresh))
					if resp.GetSecretId() != freshID {
						t.Fatalf("signed with both secrets: secret_id %s, want the new one %s", resp.GetSecretId(), freshID)
					}
				}
				e.clock.Advance(24*time.Hour - time.Second)
				acceptedBy(t, endpoint, old, oldID)
				acceptedBy(t, endpoint, fresh, freshID)
				wantStates(t, e, endpoint, stateExpiring, stateActive)

				// After it only the new one does.
				e.clock.Advance(time.Second)
				refused(t, endpoint, old)
				acceptedBy(t, endpoint, fresh, freshID)
				wantStates(t, e, endpoint, stateRetired, stateActive)

				// A rotation without overlap stops the previous secret at once.
				third := p.newSecret()
				resp, err = e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: endpoint, Secret: third})
				if err != nil {
					t.Fatalf("RotateSecret: %v", err)
				}
				refused(t, endpoint, fresh)
				acceptedBy(t, endpoint, third, resp.GetSecret().GetId())
				wantStates(t, e, endpoint, stateRetired, stateRetired, stateActive)
			})
		}
	})
}

// wantStates checks ListSecrets' states, oldest first.
func wantStates(t *testing.T, e *env, endpoint string, want ...hookverifyv1.SecretState) {
	t.Helper()
	resp, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: endpoint})
	if err != nil {
		t.Fatalf("ListSecrets: %v", err)
	}
	var got []hookverifyv1.SecretState
	for _, s := range resp.GetSecrets() {
		got = append(got, s.GetState())
	}
	if len(got) != len(want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("states %v, want %v", got, want)
		}
	}
}

// TestAddSecretRefusesTimesOutOfRange proves that a validity window the stores cannot hold is
// refused as the caller's mistake, and nothing is stored: a timestamp outside what
// google.protobuf.Timestamp allows (years 1 to 9999) overflowed the stores' microsecond
// encoding and came back as another time, and the year-1 minimum reads back as "no limit".
// So is an empty window (not_after equal to not_before), a secret that would never be in force.
func TestAddSecretRefusesTimesOutOfRange(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"})
		for _, tt := range []struct {
			name                string
			notBefore, notAfter *timestamppb.Timestamp
		}{
			{"not_after far beyond year 9999", nil, &timestamppb.Timestamp{Seconds: 1 << 60}},
			{"not_before far before year 1", &timestamppb.Timestamp{Seconds: -1 << 60}, nil},
			{"not_after with nanos out of range", nil, &timestamppb.Timestamp{Seconds: e.clock.Now().Unix(), Nanos: -1}},
			{"not_after at the zero time", nil, timestamppb.New(time.Time{})},
			{"not_after equal to not_before", timestamppb.New(e.clock.Now().Add(time.Hour)), timestamppb.New(e.clock.Now().Add(time.Hour))},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "shop",
					Secret: stripeProvider.newSecret(), NotBefore: tt.notBefore, NotAfter: tt.notAfter})
				wantCode(t, err, codes.InvalidArgument)
			})
		}
		wantStates(t, e, "shop")
	})
}

// TestRetiringARetiredSecretRecordsNothing proves the audit trail's promise, "no record
// without its change", for a repeated retirement, as it holds for a repeated token revocation:
// the secret keeps its first retirement time, so a second secret.retire record would name
// another caller and time for a retirement that did not happen then.
func TestRetiringARetiredSecretRecordsNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		_, id := e.setup(t, stripeProvider, "shop")
		retire := func() *hookverifyv1.SecretInfo {
			t.Helper()
			resp, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shop", SecretId: id})
			if err != nil {
				t.Fatalf("RetireSecret: %v", err)
			}
			return resp.GetSecret()
		}
		first := retire()
		e.clock.Advance(time.Hour)
		if again := retire(); !again.GetRetireTime().AsTime().Equal(first.GetRetireTime().AsTime()) {
			t.Fatalf("retiring again moved retire_time from %v to %v", first.GetRetireTime().AsTime(), again.GetRetireTime().AsTime())
		}
		resp, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndpointId: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		var retires []*hookverifyv1.AuditEvent
		for _, ev := range resp.GetEvents() {
			if ev.GetAction() == "secret.retire" {
				retires = append(retires, ev)
			}
		}
		if len(retires) != 1 || !retires[0].GetTime().AsTime().Equal(first.GetRetireTime().AsTime()) {
			t.Fatalf("secret.retire events %v, want one at %v", retires, first.GetRetireTime().AsTime())
		}
	})
}

// TestRetiredSecretStaysRetiredAcrossAClockStepBack: README's threat model tells whoever finds
// a secret stolen to retire it, and secret retire "stops a secret now"; retirement was kept as
// a time, compared with the clock at each delivery, so after the server's clock stepped back
// past the retirement (an NTP step, a VM restored from a snapshot: on the embedded store the
// machine's clock is the only one) the retired secret authenticated deliveries again, until
// the clock caught up. A secret's not_after is a time by design; a retirement is an act.
func TestRetiredSecretStaysRetiredAcrossAClockStepBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		kept, keptID := e.setup(t, p, "stepback")
		stolen := p.newSecret()
		stolenID := e.addSecret(t, "stepback", stolen)
		if got := e.accept(t, e.deliver(t, p, "stepback", eventID(p), stolen)).GetSecretId(); got != stolenID {
			t.Fatalf("secret_id %s, want %s", got, stolenID)
		}
		e.clock.Advance(time.Minute)
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "stepback", SecretId: stolenID}); err != nil {
			t.Fatal(err)
		}
		e.reject(t, e.deliver(t, p, "stepback", eventID(p), stolen), mismatch)

		e.clock.Advance(-time.Hour) // the clock steps back an hour
		e.reject(t, e.deliver(t, p, "stepback", eventID(p), stolen), mismatch)
		if got := e.accept(t, e.deliver(t, p, "stepback", eventID(p), kept)).GetSecretId(); got != keptID {
			t.Fatalf("secret_id %s, want %s", got, keptID)
		}
		// Reloaded from the store (another instance's view, or this one's after its TTL).
		other := e.start(t, e.store)
		other.reject(t, e.deliver(t, p, "stepback", eventID(p), stolen), mismatch)
	})
}
