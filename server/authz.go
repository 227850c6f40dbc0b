package server

import (
	"context"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// rule authorizes one RPC. check runs before the handler and before any lookup the handler
// makes, so a refusal never depends on whether the endpoint exists; filter, when set, trims a
// successful response to what the caller's scopes cover.
type rule struct {
	check  func(ctx context.Context, s *Server, scopes scopeSet, req any) error
	filter func(scopes scopeSet, resp any)
}

// methodRules is the authorization table: every RPC of every service the server registers,
// by full method name. A method missing here is refused (see authInterceptor), so a new RPC
// cannot be left open by accident; a test checks the table against the registered services.
var methodRules = map[string]rule{
	hookverifyv1.VerifierService_Verify_FullMethodName: {check: func(_ context.Context, _ *Server, scopes scopeSet, req any) error {
		return needEndpoints(scopes, ScopeVerify, []string{req.(*hookverifyv1.VerifyRequest).GetEndpointId()})
	}},

	hookverifyv1.AdminService_CreateEndpoint_FullMethodName:  adminOnly,
	hookverifyv1.AdminService_GetEndpoint_FullMethodName:     adminOnly,
	hookverifyv1.AdminService_ListEndpoints_FullMethodName:   adminOnly,
	hookverifyv1.AdminService_UpdateEndpoint_FullMethodName:  adminOnly,
	hookverifyv1.AdminService_AddSecret_FullMethodName:       adminOnly,
	hookverifyv1.AdminService_RotateSecret_FullMethodName:    adminOnly,
	hookverifyv1.AdminService_RetireSecret_FullMethodName:    adminOnly,
	hookverifyv1.AdminService_ListSecrets_FullMethodName:     adminOnly,
	hookverifyv1.AdminService_ListProviders_FullMethodName:   adminOnly,
	hookverifyv1.AdminService_ListAuditEvents_FullMethodName: adminOnly,
	hookverifyv1.AdminService_RekeySecrets_FullMethodName:    adminOnly,

	hookverifyv1.TokenService_CreateToken_FullMethodName: adminOnly,
	hookverifyv1.TokenService_ListTokens_FullMethodName:  adminOnly,
	hookverifyv1.TokenService_RevokeToken_FullMethodName: adminOnly,

	// Lease and ListDeadLetters filter by endpoint: a caller scoped to some endpoints must
	// name them (an empty filter means every endpoint, which needs inbox:*).
	hookverifyv1.InboxService_Lease_FullMethodName: {check: func(_ context.Context, _ *Server, scopes scopeSet, req any) error {
		return needInboxFilter(scopes, req.(*hookverifyv1.LeaseRequest).GetEndpointIds())
	}},
	hookverifyv1.InboxService_ListDeadLetters_FullMethodName: {check: func(_ context.Context, _ *Server, scopes scopeSet, req any) error {
		return needInboxFilter(scopes, req.(*hookverifyv1.ListDeadLettersRequest).GetEndpointIds())
	}},
	// Calls on one delivery name it by inbox id; its endpoint is looked up after the caller
	// proved some inbox scope, and an unknown id is refused like one out of scope.
	hookverifyv1.InboxService_Ack_FullMethodName: {check: func(ctx context.Context, s *Server, scopes scopeSet, req any) error {
		return s.needDeliveries(ctx, scopes, req.(*hookverifyv1.AckRequest).GetInboxId())
	}},
	// AckMany names several deliveries; a scoped caller is refused if any is out of scope.
	hookverifyv1.InboxService_AckMany_FullMethodName: {check: func(ctx context.Context, s *Server, scopes scopeSet, req any) error {
		acks := req.(*hookverifyv1.AckManyRequest).GetAcks()
		if len(acks) > maxAckBatch && scopes.allowsAny(ScopeInbox) {
			// The handler refuses it as malformed, having done nothing: no need to read
			// the endpoints of however many ids a message can hold first.
			return nil
		}
		ids := make([]string, len(acks))
		for i, a := range acks {
			ids[i] = a.GetInboxId()
		}
		return s.needDeliveries(ctx, scopes, ids...)
	}},
	hookverifyv1.InboxService_Nack_FullMethodName: {check: func(ctx context.Context, s *Server, scopes scopeSet, req any) error {
		return s.needDeliveries(ctx, scopes, req.(*hookverifyv1.NackRequest).GetInboxId())
	}},
	hookverifyv1.InboxService_ExtendLease_FullMethodName: {check: func(ctx context.Context, s *Server, scopes scopeSet, req any) error {
		return s.needDeliveries(ctx, scopes, req.(*hookverifyv1.ExtendLeaseRequest).GetInboxId())
	}},
	hookverifyv1.InboxService_Requeue_FullMethodName: {check: func(ctx context.Context, s *Server, scopes scopeSet, req any) error {
		return s.needDeliveries(ctx, scopes, req.(*hookverifyv1.RequeueRequest).GetInboxId())
	}},
	hookverifyv1.InboxService_Discard_FullMethodName: {check: func(ctx context.Context, s *Server, scopes scopeSet, req any) error {
		return s.needDeliveries(ctx, scopes, req.(*hookverifyv1.DiscardRequest).GetInboxId())
	}},
	// GetInboxStats answers any inbox caller, with only the endpoints its scopes cover.
	hookverifyv1.InboxService_GetInboxStats_FullMethodName: {
		check: func(_ context.Context, _ *Server, scopes scopeSet, _ any) error {
			if !scopes.allowsAny(ScopeInbox) {
				return denied("no inbox scope")
			}
			return nil
		},
		filter: func(scopes scopeSet, resp any) {
			r := resp.(*hookverifyv1.GetInboxStatsResponse)
			kept := r.Endpoints[:0]
			for _, e := range r.Endpoints {
				if scopes.allows(ScopeInbox, e.GetEndpointId()) {
					kept = append(kept, e)
				}
			}
			r.Endpoints = kept
		},
	},
}

var adminOnly = rule{check: func(_ context.Context, _ *Server, scopes scopeSet, _ any) error {
	if !scopes.allowsAll(ScopeAdmin) {
		return denied("admin scope required")
	}
	return nil
}}

// authorize applies the method's rule; a method without one is refused.
func (s *Server) authorize(ctx context.Context, c caller, fullMethod string, req any) error {
	r, ok := methodRules[fullMethod]
	if !ok || r.check == nil {
		return denied("method without an authorization rule")
	}
	return r.check(ctx, s, c.scopes, req)
}

// needEndpoints requires kind on every endpoint id. The request's ids are only compared with
// the scopes, never looked up.
func needEndpoints(scopes scopeSet, kind string, endpointIDs []string) error {
	for _, id := range endpointIDs {
		if !scopes.allows(kind, id) {
			return denied(kind + " scope does not cover the endpoint")
		}
	}
	return nil
}

func needInboxFilter(scopes scopeSet, endpointIDs []string) error {
	if len(endpointIDs) == 0 {
		if !scopes.allowsAll(ScopeInbox) {
			return denied("inbox scope on every endpoint needed without an endpoint filter")
		}
		return nil
	}
	return needEndpoints(scopes, ScopeInbox, endpointIDs)
}

// needDeliveries requires inbox on the endpoint of every delivery named, looked up with one
// read. A caller with inbox on every endpoint skips the lookup; others are refused, with the
// same message, whether a delivery is out of scope or does not exist.
func (s *Server) needDeliveries(ctx context.Context, scopes scopeSet, inboxIDs ...string) error {
	if scopes.allowsAll(ScopeInbox) {
		return nil
	}
	if !scopes.allowsAny(ScopeInbox) {
		return denied("no inbox scope")
	}
	st, err := s.storage()
	if err != nil {
		return err
	}
	endpoints, err := st.DeliveryEndpoints(ctx, inboxIDs)
	if err != nil {
		return s.storageStatus(ctx, "authorize", err)
	}
	endpointIDs := make([]string, len(inboxIDs))
	for i, id := range inboxIDs {
		endpointID, ok := endpoints[id]
		if !ok {
			return denied("unknown inbox id")
		}
		endpointIDs[i] = endpointID
	}
	return needEndpoints(scopes, ScopeInbox, endpointIDs)
}
