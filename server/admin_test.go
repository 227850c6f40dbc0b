package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// TestAdminEndpoints proves CreateEndpoint's defaults and validation, ALREADY_EXISTS,
// Get/List, and UpdateEndpoint (provider fixed, defaults re-applied, disabling effective).
func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		created := e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"})

		t.Run("defaults", func(t *testing.T) {
			if created.GetTimestampTolerance().AsDuration() != 300*time.Second {
				t.Errorf("tolerance %v, want 300s", created.GetTimestampTolerance().AsDuration())
			}
			if created.GetMaxBodyBytes() != 1<<20 {
				t.Errorf("max_body_bytes %d, want 1 MiB", created.GetMaxBodyBytes())
			}
			if created.GetDedupeScope() != "shop" {
				t.Errorf("dedupe_scope %q, want the id", created.GetDedupeScope())
			}
			if created.GetDisabled() || len(created.GetOptions()) != 0 {
				t.Errorf("disabled %v, options %v; want enabled, none", created.GetDisabled(), created.GetOptions())
			}
			if !created.GetCreateTime().AsTime().Equal(epoch) || !created.GetUpdateTime().AsTime().Equal(epoch) {
				t.Errorf("create/update time %v/%v, want the clock's %v", created.GetCreateTime().AsTime(), created.GetUpdateTime().AsTime(), epoch)
			}
			got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"})
			if err != nil {
				t.Fatalf("GetEndpoint: %v", err)
			}
			if !proto.Equal(got.GetEndpoint(), created) {
				t.Errorf("GetEndpoint = %v, want what CreateEndpoint returned: %v", got.GetEndpoint(), created)
			}
		})

		t.Run("explicit settings", func(t *testing.T) {
			ep := e.createEndpoint(t, &hookverifyv1.Endpoint{
				Id: "gh.main_1-x", Provider: "github", MaxBodyBytes: server.MaxBodyCeiling,
				TimestampTolerance: durationpb.New(server.MaxTolerance), DedupeScope: "Scope.A-1_b",
			})
			if ep.GetMaxBodyBytes() != server.MaxBodyCeiling || ep.GetTimestampTolerance().AsDuration() != server.MaxTolerance || ep.GetDedupeScope() != "Scope.A-1_b" {
				t.Fatalf("stored %v", ep)
			}
		})

		t.Run("validation", func(t *testing.T) {
			tests := []struct {
				name string
				ep   *hookverifyv1.Endpoint
			}{
				{"no endpoint", nil},
				{"empty id", &hookverifyv1.Endpoint{Provider: "stripe"}},
				{"id with a space", &hookverifyv1.Endpoint{Id: "my shop", Provider: "stripe"}},
				{"id with a slash", &hookverifyv1.Endpoint{Id: "a/b", Provider: "stripe"}},
				{"id with a NUL", &hookverifyv1.Endpoint{Id: "a\x00b", Provider: "stripe"}},
				{"id with non-ASCII", &hookverifyv1.Endpoint{Id: "café", Provider: "stripe"}},
				{"id of 129 characters", &hookverifyv1.Endpoint{Id: strings.Repeat("a", 129), Provider: "stripe"}},
				{"unknown provider", &hookverifyv1.Endpoint{Id: "pp", Provider: "paypal"}},
				{"empty provider", &hookverifyv1.Endpoint{Id: "pp"}},
				{"provider in another case", &hookverifyv1.Endpoint{Id: "pp", Provider: "Stripe"}},
				{"negative max_body_bytes", &hookverifyv1.Endpoint{Id: "x", Provider: "stripe", MaxBodyBytes: -1}},
				{"max_body_bytes over the ceiling", &hookverifyv1.Endpoint{Id: "x", Provider: "stripe", MaxBodyBytes: server.MaxBodyCeiling + 1}},
				{"negative tolerance", &hookverifyv1.Endpoint{Id: "x", Provider: "stripe", TimestampTolerance: durationpb.New(-time.Second)}},
				{"tolerance over the maximum", &hookverifyv1.Endpoint{Id: "x", Provider: "stripe", TimestampTolerance: durationpb.New(server.MaxTolerance + time.Second)}},
				{"bad dedupe_scope", &hookverifyv1.Endpoint{Id: "x", Provider: "stripe", DedupeScope: "a b"}},
				{"options for stripe", &hookverifyv1.Endpoint{Id: "x", Provider: "stripe", Options: map[string]string{"mode": "live"}}},
				{"options for github", &hookverifyv1.Endpoint{Id: "x", Provider: "github", Options: map[string]string{"a": "b"}}},
				{"options for standard-webhooks", &hookverifyv1.Endpoint{Id: "x", Provider: "standard-webhooks", Options: map[string]string{"a": ""}}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: tt.ep})
					wantCode(t, err, codes.InvalidArgument)
				})
			}
			list, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.GetEndpoints()) != 2 {
				t.Fatalf("%d endpoints after invalid creations, want 2", len(list.GetEndpoints()))
			}
		})

		t.Run("duplicate id", func(t *testing.T) {
			_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", Provider: "github"}})
			wantCode(t, err, codes.AlreadyExists)
			got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"})
			if err != nil || got.GetEndpoint().GetProvider() != "stripe" {
				t.Fatalf("GetEndpoint after a refused duplicate = %v, %v; want the stripe endpoint", got, err)
			}
		})

		t.Run("get and list", func(t *testing.T) {
			_, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "nope"})
			wantCode(t, err, codes.NotFound)
			_, err = e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{})
			wantCode(t, err, codes.InvalidArgument)
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "a-first", Provider: "standard-webhooks"})
			list, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, ep := range list.GetEndpoints() {
				ids = append(ids, ep.GetId())
			}
			if strings.Join(ids, " ") != "a-first gh.main_1-x shop" {
				t.Fatalf("ListEndpoints ids %v, want [a-first gh.main_1-x shop]", ids)
			}
		})

		t.Run("update", func(t *testing.T) {
			p := stripeProvider
			secret := p.newSecret()
			e.addSecret(t, "shop", secret)
			e.clock.Advance(time.Minute)

			_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", Provider: "github"}})
			wantCode(t, err, codes.InvalidArgument)
			_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "nope", Provider: "stripe"}})
			wantCode(t, err, codes.NotFound)
			_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", MaxBodyBytes: -5}})
			wantCode(t, err, codes.InvalidArgument)
			_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", Options: map[string]string{"x": "y"}}})
			wantCode(t, err, codes.InvalidArgument)
			// The dedupe scope is fixed: changing it would change every operation key.
			_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", DedupeScope: "elsewhere"}})
			wantCode(t, err, codes.InvalidArgument)
			if _, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", DedupeScope: "shop"}}); err != nil {
				t.Fatalf("restating the same dedupe_scope: %v", err)
			}

			// Later than the updates above: two in the same microsecond are 1 µs apart.
			e.clock.Advance(time.Second)
			resp, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
				Id: "shop", Provider: "stripe", Disabled: true, MaxBodyBytes: 4096, TimestampTolerance: durationpb.New(time.Minute),
			}})
			if err != nil {
				t.Fatalf("UpdateEndpoint: %v", err)
			}
			up := resp.GetEndpoint()
			if !up.GetDisabled() || up.GetMaxBodyBytes() != 4096 || up.GetTimestampTolerance().AsDuration() != time.Minute || up.GetProvider() != "stripe" || up.GetDedupeScope() != "shop" {
				t.Fatalf("updated endpoint %v", up)
			}
			if !up.GetCreateTime().AsTime().Equal(epoch) || !up.GetUpdateTime().AsTime().Equal(e.clock.Now()) {
				t.Fatalf("create/update time %v/%v, want %v/%v", up.GetCreateTime().AsTime(), up.GetUpdateTime().AsTime(), epoch, e.clock.Now())
			}
			e.reject(t, e.deliver(t, p, "shop", eventID(p), secret), endpointDisabled)

			// Enabling again, with an empty provider meaning "unchanged" and zero values
			// meaning the defaults again.
			resp, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop"}})
			if err != nil {
				t.Fatalf("UpdateEndpoint: %v", err)
			}
			if up := resp.GetEndpoint(); up.GetDisabled() || up.GetMaxBodyBytes() != server.DefaultMaxBodyBytes || up.GetTimestampTolerance().AsDuration() != 300*time.Second {
				t.Fatalf("re-enabled endpoint %v", up)
			}
			e.accept(t, e.deliver(t, p, "shop", eventID(p), secret))
		})
	})
}

// TestAdminSecrets proves AddSecret's validation (never echoing the secret), NOT_FOUND and
// INVALID_ARGUMENT answers of the secret RPCs, and the states ListSecrets reports.
func TestAdminSecrets(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "sw", Provider: "standard-webhooks"})
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"})
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "gh", Provider: "github"})

		t.Run("invalid secrets", func(t *testing.T) {
			notBase64 := "whsec_" + randomAlnum(20) + "!!%%" + randomAlnum(20)
			tests := []struct {
				name     string
				endpoint string
				secret   string
			}{
				{"standard-webhooks secret that is not base64", "sw", notBase64},
				{"standard-webhooks asymmetric key", "sw", "whsk_" + randomAlnum(40)},
				{"stripe secret with surrounding space", "shop", " whsec_" + randomAlnum(32) + " "},
				{"empty secret", "gh", ""},
				{"secret above 8 KiB", "gh", strings.Repeat("k", 8<<10+1)},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: tt.endpoint, Secret: tt.secret})
					wantCode(t, err, codes.InvalidArgument)
					msg := status.Convert(err).Message()
					if trimmed := strings.TrimSpace(tt.secret); len(trimmed) >= 8 && strings.Contains(msg, trimmed[:8]) {
						t.Fatalf("error message %q repeats the secret", msg)
					}
					_, err = e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: tt.endpoint, Secret: tt.secret})
					wantCode(t, err, codes.InvalidArgument)
					if msg := status.Convert(err).Message(); len(tt.secret) >= 8 && strings.Contains(msg, strings.TrimSpace(tt.secret)[:8]) {
						t.Fatalf("error message %q repeats the secret", msg)
					}
				})
			}
			for _, id := range []string{"sw", "shop", "gh"} {
				wantStates(t, e, id) // nothing was stored
			}
		})

		t.Run("requests that cannot be served", func(t *testing.T) {
			ok := stripeProvider.newSecret()
			now := e.clock.Now()
			tests := []struct {
				name string
				call func() error
				want codes.Code
			}{
				{"AddSecret to an unknown endpoint", func() error {
					_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "nope", Secret: ok})
					return err
				}, codes.NotFound},
				{"AddSecret without endpoint", func() error {
					_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{Secret: ok})
					return err
				}, codes.InvalidArgument},
				{"AddSecret ending before it starts", func() error {
					_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "shop", Secret: ok,
						NotBefore: timestamppb.New(now.Add(time.Hour)), NotAfter: timestamppb.New(now)})
					return err
				}, codes.InvalidArgument},
				{"RotateSecret with a negative overlap", func() error {
					_, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "shop", Secret: ok, Overlap: durationpb.New(-time.Second)})
					return err
				}, codes.InvalidArgument},
				{"RotateSecret on an unknown endpoint", func() error {
					_, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "nope", Secret: ok})
					return err
				}, codes.NotFound},
				{"RetireSecret of an unknown secret", func() error {
					_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shop", SecretId: "sec_000000000000000000000000"})
					return err
				}, codes.NotFound},
				{"RetireSecret without ids", func() error {
					_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{})
					return err
				}, codes.InvalidArgument},
				{"ListSecrets of an unknown endpoint", func() error {
					_, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "nope"})
					return err
				}, codes.NotFound},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					wantCode(t, tt.call(), tt.want)
				})
			}
			wantStates(t, e, "shop")
		})

		t.Run("RetireSecret of another endpoint's secret", func(t *testing.T) {
			id := e.addSecret(t, "gh", githubProvider.newSecret())
			_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shop", SecretId: id})
			wantCode(t, err, codes.NotFound)
			wantStates(t, e, "gh", stateActive)
		})

		t.Run("ListSecrets states", func(t *testing.T) {
			p := stripeProvider
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "states", Provider: "stripe"})
			add := func(req *hookverifyv1.AddSecretRequest) *hookverifyv1.SecretInfo {
				t.Helper()
				e.clock.Advance(time.Second) // oldest first is then the order below
				req.EndpointId, req.Secret = "states", p.newSecret()
				resp, err := e.admin.AddSecret(t.Context(), req)
				if err != nil {
					t.Fatalf("AddSecret: %v", err)
				}
				return resp.GetSecret()
			}
			active := add(&hookverifyv1.AddSecretRequest{})
			retired := add(&hookverifyv1.AddSecretRequest{})
			expiring := add(&hookverifyv1.AddSecretRequest{NotAfter: timestamppb.New(e.clock.Now().Add(time.Hour))})
			scheduled := add(&hookverifyv1.AddSecretRequest{NotBefore: timestamppb.New(e.clock.Now().Add(time.Hour))})
			// add moves the clock a second on first: this one ends a second after it is added.
			past := add(&hookverifyv1.AddSecretRequest{NotAfter: timestamppb.New(e.clock.Now().Add(2 * time.Second))})
			if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "states", SecretId: retired.GetId()}); err != nil {
				t.Fatalf("RetireSecret: %v", err)
			}
			e.clock.Advance(time.Second) // past reaches its not_after
			wantStates(t, e, "states", stateActive, stateRetired, stateExpiring, stateScheduled, stateRetired)

			resp, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "states"})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []*hookverifyv1.SecretInfo{active, retired, expiring, scheduled, past} {
				got := resp.GetSecrets()[i]
				if got.GetId() != want.GetId() || got.GetEndpointId() != "states" || !got.GetCreateTime().AsTime().Equal(want.GetCreateTime().AsTime()) {
					t.Errorf("secret %d is %v, want %v", i, got, want)
				}
			}
			if got := resp.GetSecrets()[1]; got.GetRetireTime() == nil {
				t.Errorf("retired secret has no retire_time: %v", got)
			}
			if got := resp.GetSecrets()[3]; !got.GetNotBefore().AsTime().Equal(scheduled.GetNotBefore().AsTime()) {
				t.Errorf("scheduled secret not_before %v, want %v", got.GetNotBefore().AsTime(), scheduled.GetNotBefore().AsTime())
			}

			// Hours later the schedule has moved on.
			e.clock.Advance(2 * time.Hour)
			wantStates(t, e, "states", stateActive, stateRetired, stateRetired, stateActive, stateRetired)
		})

		// A not_after already reached would store a secret never in force (RETIRED at once):
		// most likely a mistyped date, refused rather than found out as rejected deliveries.
		t.Run("AddSecret refuses a not_after already reached", func(t *testing.T) {
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "ended", Provider: "stripe"})
			for _, at := range []time.Time{e.clock.Now(), e.clock.Now().Add(-24 * time.Hour)} {
				_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "ended", Secret: stripeProvider.newSecret(), NotAfter: timestamppb.New(at)})
				wantCode(t, err, codes.InvalidArgument)
				if !strings.Contains(err.Error(), "not_after") {
					t.Errorf("refusal %v does not name not_after", err)
				}
			}
			wantStates(t, e, "ended")
		})
	})
}

// TestAdminListProviders proves the providers the server announces and their properties.
func TestAdminListProviders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	resp, err := e.admin.ListProviders(t.Context(), &hookverifyv1.ListProvidersRequest{})
	if err != nil {
		t.Fatalf("ListProviders: %v", err)
	}
	tests := []struct {
		name           string
		signsTimestamp bool
	}{
		{"github", false},
		{"standard-webhooks", true},
		{"stripe", true},
	}
	// Every registered protocol is listed once, ordered by name.
	if len(resp.GetProviders()) != len(protocol.Builtin()) {
		t.Fatalf("%d providers listed, %d registered", len(resp.GetProviders()), len(protocol.Builtin()))
	}
	byName := map[string]*hookverifyv1.ProviderInfo{}
	for i, p := range resp.GetProviders() {
		if i > 0 && resp.GetProviders()[i-1].GetName() >= p.GetName() {
			t.Fatalf("providers not ordered by name: %q before %q", resp.GetProviders()[i-1].GetName(), p.GetName())
		}
		byName[p.GetName()] = p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := byName[tt.name]
			if got == nil {
				t.Fatalf("provider %q not listed", tt.name)
			}
			if got.GetSignsTimestamp() != tt.signsTimestamp {
				t.Errorf("signs_timestamp %v, want %v", got.GetSignsTimestamp(), tt.signsTimestamp)
			}
			wantTolerance := time.Duration(0)
			if tt.signsTimestamp {
				wantTolerance = 300 * time.Second
			}
			if got.GetDefaultTolerance().AsDuration() != wantTolerance {
				t.Errorf("default_tolerance %v, want %v", got.GetDefaultTolerance().AsDuration(), wantTolerance)
			}
			if got.GetDisplayName() == "" || got.GetSignatureScheme() == "" || got.GetIdentitySource() == "" || !strings.HasPrefix(got.GetDocsUrl(), "https://") {
				t.Errorf("incomplete description %v", got)
			}
			if got.GetNeedsUrl() {
				t.Errorf("needs_url set; none of these protocols signs the URL")
			}
		})
	}
}

// TestAdminErrorsDoNotEchoHugeInput proves that a call naming something with a huge string
// gets a clear, short answer (clipStatusMessage). Error messages quoted the caller's ids, provider name,
// option names and scopes whole: gRPC sends the message in the trailers, and at some MiB of
// id the client could not even read the answer (the connection failed with an HTTP/2
// COMPRESSION_ERROR, reported as UNAVAILABLE, which clients retry).
func TestAdminErrorsDoNotEchoHugeInput(t *testing.T) {
	t.Parallel()
	const maxMessage = 4 << 10
	e := newEnv(t, backends[0])
	e.setup(t, stripeProvider, "shop")
	for _, size := range []int{1 << 20, 20 << 20} {
		big := strings.Repeat("x", size)
		for _, tt := range []struct {
			name string
			want codes.Code
			call func() error
		}{
			{"RetireSecret", codes.NotFound, func() error {
				_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shop", SecretId: big})
				return err
			}},
			{"RevokeToken", codes.NotFound, func() error {
				_, err := e.tokens.RevokeToken(t.Context(), &hookverifyv1.RevokeTokenRequest{Id: big})
				return err
			}},
			{"GetEndpoint", codes.NotFound, func() error {
				_, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: big})
				return err
			}},
			{"CreateEndpoint with an unknown provider", codes.InvalidArgument, func() error {
				_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "x", Provider: big}})
				return err
			}},
			{"CreateEndpoint with an unknown option", codes.InvalidArgument, func() error {
				_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
					Id: "x", Provider: "stripe", Options: map[string]string{big: "1"}}})
				return err
			}},
			{"Ack", codes.NotFound, func() error {
				_, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: big, LeaseToken: "lease_x"})
				return err
			}},
			{"CreateToken with an invalid scope", codes.InvalidArgument, func() error {
				_, err := e.tokens.CreateToken(t.Context(), &hookverifyv1.CreateTokenRequest{Name: "n", Scopes: []string{big}})
				return err
			}},
		} {
			t.Run(fmt.Sprintf("%s %d bytes", tt.name, size), func(t *testing.T) {
				err := tt.call()
				wantCode(t, err, tt.want)
				if msg := status.Convert(err).Message(); len(msg) > maxMessage {
					t.Fatalf("message of %d bytes, want at most %d", len(msg), maxMessage)
				}
			})
		}
	}
}

// TestCreateTokenRefusesNULInName proves both stores answer a token name holding NUL alike:
// PostgreSQL refuses NUL in text, SQLite stored it.
func TestCreateTokenRefusesNULInName(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		_, err := e.tokens.CreateToken(t.Context(), &hookverifyv1.CreateTokenRequest{Name: "edge\x00one", Scopes: []string{"verify:*"}})
		wantCode(t, err, codes.InvalidArgument)
		if msg := status.Convert(err).Message(); !strings.Contains(msg, "name") {
			t.Fatalf("message %q does not say what is wrong", msg)
		}
	})
}

// Mailchimp signs nothing: the secret itself travels in the query of the URL it calls. The
// README tells endpoints behind a proxy to set public_url "to the URL the provider calls",
// which for Mailchimp is the URL with the secret in it. A public_url with a query replaces the
// forwarded URL's query, so the secret would then come from the endpoint's own settings on
// every delivery (any POST authenticates), and it would sit in plain text in the endpoint
// row, every GetEndpoint answer and the audit trail. Such a public_url must be refused.
func TestPublicURLCannotCarryAStaticCredential(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		secret := "mc" + randomAlnum(30)
		_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "mc", Provider: "mailchimp",
			Options: map[string]string{"public_url": "https://hooks.example.com/mc?secret=" + secret},
		}})
		wantCode(t, err, codes.InvalidArgument)

		// The same through an update of an endpoint made without it.
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "mc2", Provider: "mailchimp",
			Options: map[string]string{"public_url": "https://hooks.example.com/mc2"}})
		e.addSecret(t, "mc2", secret)
		_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "mc2", Options: map[string]string{"public_url": "https://hooks.example.com/mc2?secret=" + secret},
		}})
		wantCode(t, err, codes.InvalidArgument)

		// Whatever was refused, a POST without the secret never authenticates.
		body := []byte("type=subscribe&fired_at=2026-12-02+10%3A00%3A00&data%5Bid%5D=8a25ff1d98")
		resp, err := e.verifier.Verify(t.Context(), &hookverifyv1.VerifyRequest{EndpointId: "mc2", Method: "POST",
			Url: "https://internal.example/mc2", Body: body,
			Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}})
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_REJECTED {
			t.Errorf("a POST without the secret: %v, want REJECTED", resp.GetVerdict())
		}
		if strings.Contains(string(e.transcript.Bytes()), secret) {
			t.Errorf("the secret reached a response or error")
		}

		// A row stored before the refusal, written straight to the store: the query of its
		// public_url is ignored, and the delivery's own decides.
		if err := e.store.CreateEndpoint(t.Context(), storage.Endpoint{ID: "mc3", Provider: "mailchimp", DedupeScope: "mc3",
			MaxBodyBytes: 1 << 20, Options: map[string]string{"public_url": "https://hooks.example.com/mc3?secret=" + secret}}); err != nil {
			t.Fatal(err)
		}
		e.addSecret(t, "mc3", secret)
		for _, tc := range []struct {
			url  string
			want hookverifyv1.Verdict
		}{
			{"https://internal.example/mc3", hookverifyv1.Verdict_VERDICT_REJECTED},
			{"https://internal.example/mc3?secret=" + secret, hookverifyv1.Verdict_VERDICT_ACCEPTED},
		} {
			resp, err := e.verifier.Verify(t.Context(), &hookverifyv1.VerifyRequest{EndpointId: "mc3", Method: "POST", Url: tc.url, Body: body,
				Headers: []*hookverifyv1.HeaderField{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if resp.GetVerdict() != tc.want {
				t.Errorf("stored public_url with the secret, delivery to %s: %v (%s), want %v",
					strings.ReplaceAll(tc.url, secret, "<secret>"), resp.GetVerdict(), resp.GetDetail(), tc.want)
			}
		}
	})
}

// interleavingStore runs hook once, at the first point where an update may read the
// endpoint: after a GetEndpoint (the read of a read-then-write update), or before a
// ModifyEndpoint (whose read is inside the write's transaction). The hook lands a concurrent
// change exactly in the window a read-then-write update leaves open.
type interleavingStore struct {
	storage.Store
	armed atomic.Bool
	hook  func()
}

func (s *interleavingStore) fire() {
	if s.armed.CompareAndSwap(true, false) {
		s.hook()
	}
}

func (s *interleavingStore) GetEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	e, err := s.Store.GetEndpoint(ctx, id)
	s.fire()
	return e, err
}

func (s *interleavingStore) ModifyEndpoint(ctx context.Context, id string, change storage.EndpointChange) (storage.Endpoint, error) {
	s.fire()
	return s.Store.ModifyEndpoint(ctx, id, change)
}

func endpointUpdates(t *testing.T, admin hookverifyv1.AdminServiceClient, id string) []string {
	t.Helper()
	resp, err := admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndpointId: id})
	if err != nil {
		t.Fatalf("ListAuditEvents: %v", err)
	}
	var details []string
	for _, ev := range resp.GetEvents() {
		if ev.GetAction() == "endpoint.update" {
			details = append(details, ev.GetDetail())
		}
	}
	return details
}

// An update that lands between another update's read and its write: the later write must
// describe, in its audit record, the change from what was stored when it was written. Before,
// the detail was the difference from the earlier read, so the re-enabling never showed.
func TestUpdateEndpointAuditDescribesTheChangeAsWritten(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.newDatabase(t)
		st := &interleavingStore{Store: openStore(t, b, dsn)}
		e := newEnvOn(t, b, dsn, st)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"})

		st.hook = func() {
			if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
				Id: "shop", Disabled: true}}); err != nil {
				t.Errorf("concurrent disable: %v", err)
			}
		}
		st.armed.Store(true)
		// A whole replacement that says enabled: it wins, being last, but its record must say
		// that it enabled the endpoint again.
		resp, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "shop", MaxBodyBytes: 4096}})
		if err != nil {
			t.Fatalf("UpdateEndpoint: %v", err)
		}
		if st.armed.Load() {
			t.Fatal("the concurrent disable never ran")
		}
		if resp.GetEndpoint().GetDisabled() {
			t.Fatalf("the last update (enabled) did not win: %v", resp.GetEndpoint())
		}
		details := endpointUpdates(t, e.admin, "shop")
		if len(details) != 2 {
			t.Fatalf("endpoint.update records %q, want 2", details)
		}
		// The clock stands still, so the records' order is their ids': match them by content.
		disabled, enabled := false, false
		for _, d := range details {
			disabled = disabled || d == "disabled: false -> true"
			enabled = enabled || d == "max_body_bytes: 1048576 -> 4096; disabled: true -> false"
		}
		if !disabled || !enabled {
			t.Errorf("endpoint.update records %q, want the disable's and one showing that the last update set max_body_bytes and enabled the endpoint again", details)
		}

		// The same window with a request made from a read (update_time): the check is made
		// against the endpoint as it is when written, so the disable landing in the window
		// aborts it. (update_time has microsecond precision: the clock moves for the disable.)
		got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"})
		if err != nil {
			t.Fatalf("GetEndpoint: %v", err)
		}
		st.hook = func() {
			e.clock.Advance(time.Second)
			if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
				Id: "shop", Disabled: true}}); err != nil {
				t.Errorf("concurrent disable: %v", err)
			}
		}
		st.armed.Store(true)
		stale := got.GetEndpoint()
		stale.MaxBodyBytes = 2048
		_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: stale})
		wantCode(t, err, codes.Aborted)
		if got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"}); err != nil || !got.GetEndpoint().GetDisabled() {
			t.Fatalf("after the aborted update: %v, %v; want disabled", got, err)
		}
	})
}

// The read-modify-write of a client (the CLI's endpoint update reads the endpoint, applies the
// flags and sends it all back, update_time included): one administrator disables the
// endpoint while another, from an earlier read, changes a setting. The second must not
// silently enable the endpoint again: it is refused with ABORTED, records nothing, and
// succeeds once made from a fresh read.
func TestUpdateEndpointFromAStaleReadIsAborted(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"})
		read := func() *hookverifyv1.Endpoint {
			t.Helper()
			got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"})
			if err != nil {
				t.Fatalf("GetEndpoint: %v", err)
			}
			return got.GetEndpoint()
		}
		stale := read()

		e.clock.Advance(time.Second)
		disable := read()
		disable.Disabled = true
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: disable}); err != nil {
			t.Fatalf("disable: %v", err)
		}

		e.clock.Advance(time.Second)
		stale.MaxBodyBytes = 4096
		_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: stale})
		wantCode(t, err, codes.Aborted)
		if got := read(); !got.GetDisabled() || got.GetMaxBodyBytes() == 4096 {
			t.Fatalf("after the refused update: %v, want disabled and max_body_bytes unchanged", got)
		}
		if details := endpointUpdates(t, e.admin, "shop"); len(details) != 1 {
			t.Fatalf("endpoint.update records %q, want only the disable's", details)
		}

		// Made again from a fresh read, the change applies and keeps the endpoint disabled.
		fresh := read()
		fresh.MaxBodyBytes = 4096
		resp, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: fresh})
		if err != nil {
			t.Fatalf("update from a fresh read: %v", err)
		}
		if got := resp.GetEndpoint(); !got.GetDisabled() || got.GetMaxBodyBytes() != 4096 {
			t.Fatalf("after the fresh update: %v", got)
		}
		// The answer's update_time is the stored one: an update made from the answer applies.
		next := proto.CloneOf(resp.GetEndpoint())
		next.Disabled = false
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: next}); err != nil {
			t.Fatalf("update from the previous answer: %v", err)
		}
	})
}

// TestEndpointOptionsNamingHopByHopHeadersRefused: both edges leave hop-by-hop headers
// (Connection and what it names, Upgrade, Proxy-Authorization, ...) out of what they forward,
// so an endpoint whose option names one as the header to read would reject every delivery for
// a header it never gets: refused when set, naming the option.
func TestEndpointOptionsNamingHopByHopHeadersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0]) // admin-time validation: the store plays no part
	for _, tc := range []struct {
		provider string
		options  map[string]string
		option   string
	}{
		{"shared-token", map[string]string{"header": "Proxy-Authorization"}, "header"},
		{"okta", map[string]string{"header": "upgrade"}, "header"},
		{"bearer-token", map[string]string{"id_header": "Keep-Alive"}, "id_header"},
		{"generic-hmac", map[string]string{"header": "TE"}, "header"},
		{"generic-hmac", map[string]string{"template": "{timestamp}.{header:connection}.{body}", "timestamp_header": "X-Ts"}, "template"},
		{"generic-hmac", map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "Trailer"}, "timestamp_header"},
	} {
		_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "hop", Provider: tc.provider, Options: tc.options}})
		wantCode(t, err, codes.InvalidArgument)
		if msg := status.Convert(err).Message(); !strings.Contains(msg, "hop-by-hop") || !strings.Contains(msg, "option "+tc.option+" ") {
			t.Errorf("%s %v: %q, want a refusal naming option %s as hop-by-hop", tc.provider, tc.options, msg, tc.option)
		}
	}
	// The same options naming an end-to-end header are taken.
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "fine", Provider: "generic-hmac",
		Options: map[string]string{"template": "{timestamp}.{header:X-Conn}.{body}", "timestamp_header": "X-Ts", "header": "X-Upgrade-Sig"}})
}

// TestTemplateLiteralBracesAreNotAHopByHopPlaceholder: in a generic-hmac template "{{" and "}}"
// are literal braces, so "{{header:Connection}}" signs the text "{header:Connection}" and reads
// no header. The hop-by-hop check searched the template for "{header:" without parsing it and
// refused such a template as naming Connection; the placeholders it does name are still refused.
func TestTemplateLiteralBracesAreNotAHopByHopPlaceholder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0]) // admin-time validation: the store plays no part
	for i, template := range []string{
		"{{header:Connection}}.{body}",
		"{{header:Upgrade}}.{body}{{}}",
		"{header:X-A}{{header:Te}}{body}",
	} {
		_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "lit" + string(rune('a'+i)), Provider: "generic-hmac", Options: map[string]string{"template": template}}})
		if err != nil {
			t.Errorf("template %q (literal braces, no hop-by-hop placeholder): %v", template, err)
		}
	}
	for _, template := range []string{
		"{{{header:connection}.{body}",
		"{{}}{header:TE}{body}",
	} {
		_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "hop", Provider: "generic-hmac", Options: map[string]string{"template": template}}})
		wantCode(t, err, codes.InvalidArgument)
		if msg := status.Convert(err).Message(); !strings.Contains(msg, "hop-by-hop") {
			t.Errorf("template %q: %q, want a hop-by-hop refusal", template, msg)
		}
	}
}
