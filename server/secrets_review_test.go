package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestAddSecretRefusesTimesOutOfRange proves that a validity window the stores cannot hold is
// refused as the caller's mistake, and nothing is stored: a timestamp outside what
// google.protobuf.Timestamp allows (years 1 to 9999) overflowed the stores' microsecond
// encoding and came back as another time, and the year-1 minimum reads back as "no limit".
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
