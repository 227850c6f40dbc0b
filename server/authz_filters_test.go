package server_test

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestScopedLeaseFiltersNeverReachOtherEndpoints: a worker scoped to a tenant (inbox:acme-*)
// chooses the strings of its lease filter. The scope check compares them with the scope as
// text (a prefix), and the store then matches them against its rows: whatever the string
// (one that looks like a wildcard to SQL or to the scope, one with a separator, another case,
// NUL, which PostgreSQL cannot hold), a lease the check lets through hands out only
// deliveries of endpoints the scope covers, on every backend, and one it refuses is
// PERMISSION_DENIED; a dedupe scope in the filter narrows the lease, never widens it.
func TestScopedLeaseFiltersNeverReachOtherEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newAuthEnvOn(t, openStore(t, b, b.newDatabase(t)))
		inbox := hookverifyv1.NewInboxServiceClient(e.dial(t, nil))
		ctx := withToken(t.Context(), e.tokens["inbox-acme"])

		for _, req := range []*hookverifyv1.LeaseRequest{
			{EndpointIds: []string{"acme-*"}},
			{EndpointIds: []string{"acme-%"}},
			{EndpointIds: []string{"acme-_rders"}},
			{EndpointIds: []string{"acme-orders\x00"}},
			{EndpointIds: []string{"acme-\x00globex-orders"}},
			{EndpointIds: []string{"acme-orders,globex-orders"}},
			{EndpointIds: []string{"acme-orders' OR '1'='1"}},
			{EndpointIds: []string{"acme-../globex-orders"}},
			{EndpointIds: []string{"acme-orders"}, DedupeScopes: []string{"globex-orders"}},
			{EndpointIds: []string{"acme-orders"}, DedupeScopes: []string{"*"}},
		} {
			resp, err := inbox.Lease(ctx, req)
			if err != nil {
				t.Fatalf("Lease(%q, scopes %q) by inbox:acme-*: %v", req.GetEndpointIds(), req.GetDedupeScopes(), err)
			}
			if n := len(resp.GetDeliveries()); n != 0 {
				t.Errorf("Lease(%q, scopes %q) by inbox:acme-* leased %d deliveries (first of %s), want none",
					req.GetEndpointIds(), req.GetDedupeScopes(), n, resp.GetDeliveries()[0].GetEndpointId())
			}
			dead, err := inbox.ListDeadLetters(ctx, &hookverifyv1.ListDeadLettersRequest{EndpointIds: req.GetEndpointIds(), DedupeScopes: req.GetDedupeScopes()})
			if err != nil || len(dead.GetDeliveries()) != 0 {
				t.Errorf("ListDeadLetters(%q) by inbox:acme-*: %d, %v; want none", req.GetEndpointIds(), len(dead.GetDeliveries()), err)
			}
		}
		for _, ids := range [][]string{{"ACME-ORDERS"}, {"Acme-orders"}, {"globex-orders"}, {"\x00"}, {""}, {"*"}, {"acme-orders", "globex-orders"}} {
			_, err := inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: ids})
			refusedWith(t, fmt.Sprintf("Lease by inbox:acme-* of %q", ids), err, codes.PermissionDenied)
		}

		// The filters above leased nothing because nothing matched, not because nothing was
		// there: the endpoint named as it is leases its delivery.
		resp, err := inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: []string{"acme-orders"}})
		if err != nil || len(resp.GetDeliveries()) != 1 || resp.GetDeliveries()[0].GetEndpointId() != "acme-orders" {
			t.Fatalf("Lease(acme-orders) by inbox:acme-* = %v, %v; want its one delivery", resp.GetDeliveries(), err)
		}
	})
}
