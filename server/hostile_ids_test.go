package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestHostileIDsAnswerAlikeOnEveryBackend: every id, token and filter an API caller sends is a
// string of its choosing, and the stores differ in what they can hold (PostgreSQL's text no
// NUL; SQLite anything). The fuzz targets run on SQLite only, so this holds the calls that take
// such strings to one answer on every backend, for strings no stored row can have: the same
// code whatever the backend, and never UNAVAILABLE or INTERNAL (a storage failure, which a
// caller would retry for ever).
func TestHostileIDsAnswerAlikeOnEveryBackend(t *testing.T) {
	hostile := []string{"ep\x00", "\x00", strings.Repeat("e", 300), "ep\u2028x", "ep-α", "'; --"}
	answers := map[string]map[string]codes.Code{} // backend → call → code
	for _, b := range backends {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "ep", Provider: "stripe"})
		got := map[string]codes.Code{}
		answers[b.name] = got
		ctx := t.Context()
		for i, s := range hostile {
			calls := map[string]func(context.Context) error{
				"GetEndpoint": func(ctx context.Context) error {
					_, err := e.admin.GetEndpoint(ctx, &hookverifyv1.GetEndpointRequest{Id: s})
					return err
				},
				"UpdateEndpoint": func(ctx context.Context) error {
					_, err := e.admin.UpdateEndpoint(ctx, &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: s}})
					return err
				},
				"AddSecret": func(ctx context.Context) error {
					_, err := e.admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: s, Secret: "whsec_" + strings.Repeat("a", 32)})
					return err
				},
				"RotateSecret": func(ctx context.Context) error {
					_, err := e.admin.RotateSecret(ctx, &hookverifyv1.RotateSecretRequest{EndpointId: s, Secret: "whsec_" + strings.Repeat("b", 32)})
					return err
				},
				"RetireSecret endpoint": func(ctx context.Context) error {
					_, err := e.admin.RetireSecret(ctx, &hookverifyv1.RetireSecretRequest{EndpointId: s, SecretId: "sec_1"})
					return err
				},
				"RetireSecret secret": func(ctx context.Context) error {
					_, err := e.admin.RetireSecret(ctx, &hookverifyv1.RetireSecretRequest{EndpointId: "ep", SecretId: s})
					return err
				},
				"ListSecrets": func(ctx context.Context) error {
					_, err := e.admin.ListSecrets(ctx, &hookverifyv1.ListSecretsRequest{EndpointId: s})
					return err
				},
				"ListAuditEvents": func(ctx context.Context) error {
					_, err := e.admin.ListAuditEvents(ctx, &hookverifyv1.ListAuditEventsRequest{EndpointId: s})
					return err
				},
				"RevokeToken": func(ctx context.Context) error {
					_, err := e.tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: s})
					return err
				},
				"Lease endpoint": func(ctx context.Context) error {
					_, err := e.inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: []string{s}})
					return err
				},
				"Lease scope": func(ctx context.Context) error {
					_, err := e.inbox.Lease(ctx, &hookverifyv1.LeaseRequest{DedupeScopes: []string{s}})
					return err
				},
				"ListDeadLetters": func(ctx context.Context) error {
					_, err := e.inbox.ListDeadLetters(ctx, &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{s}, DedupeScopes: []string{s}})
					return err
				},
				"Ack": func(ctx context.Context) error {
					_, err := e.inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: s, LeaseToken: s})
					return err
				},
				"AckMany": func(ctx context.Context) error {
					_, err := e.inbox.AckMany(ctx, &hookverifyv1.AckManyRequest{Acks: []*hookverifyv1.AckRequest{{InboxId: s, LeaseToken: s}}})
					return err
				},
				"Nack": func(ctx context.Context) error {
					_, err := e.inbox.Nack(ctx, &hookverifyv1.NackRequest{InboxId: s, LeaseToken: s, Error: s})
					return err
				},
				"ExtendLease": func(ctx context.Context) error {
					_, err := e.inbox.ExtendLease(ctx, &hookverifyv1.ExtendLeaseRequest{InboxId: s, LeaseToken: s})
					return err
				},
				"Requeue": func(ctx context.Context) error {
					_, err := e.inbox.Requeue(ctx, &hookverifyv1.RequeueRequest{InboxId: s})
					return err
				},
				"Discard": func(ctx context.Context) error {
					_, err := e.inbox.Discard(ctx, &hookverifyv1.DiscardRequest{InboxId: s, Reason: "hostile"})
					return err
				},
			}
			for name, call := range calls {
				code := status.Code(call(ctx))
				key := fmt.Sprintf("%s(hostile[%d]=%q)", name, i, s)
				got[key] = code
				if code == codes.Unavailable || code == codes.Internal || code == codes.Unknown {
					t.Errorf("%s: %s answered %s", b.name, key, code)
				}
			}
		}
	}
	for key, code := range answers[backends[0].name] {
		for _, b := range backends[1:] {
			if other := answers[b.name][key]; other != code {
				t.Errorf("%s: %s on %s, %s on %s", key, code, backends[0].name, other, b.name)
			}
		}
	}
}
