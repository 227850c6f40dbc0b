package server_test

import (
	"maps"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// auditActions counts the endpoint's audit events by action.
func auditActions(t *testing.T, in *instance, endpointID string) map[string]int {
	t.Helper()
	resp, err := in.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndpointId: endpointID})
	if err != nil {
		t.Fatalf("ListAuditEvents: %v", err)
	}
	n := map[string]int{}
	for _, ev := range resp.GetEvents() {
		n[ev.GetAction()]++
	}
	return n
}

// Concurrent admin calls from two instances on one database end as some order of them would:
// one secret left without an end after two rotations, one winner of two updates made from
// one read, one retirement, and one audit record per change that happened.
func TestConcurrentAdminCallsFromTwoInstances(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		other := e.start(t, openStore(t, b, e.dsn))
		instances := []*instance{e.instance, other}
		_, oldID := e.setup(t, stripeProvider, "shop")

		var wg sync.WaitGroup
		rotated := make([]*hookverifyv1.RotateSecretResponse, 2)
		errs := make([]error, 2)
		for i, in := range instances {
			wg.Go(func() {
				rotated[i], errs[i] = in.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{
					EndpointId: "shop", Secret: stripeProvider.newSecret()})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("RotateSecret #%d: %v", i, err)
			}
		}
		list, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		var unended []string
		for _, s := range list.GetSecrets() {
			if s.GetNotAfter() == nil {
				unended = append(unended, s.GetId())
			}
		}
		if len(unended) != 1 {
			t.Errorf("secrets without an end after two concurrent rotations: %v, want one", unended)
		}
		// The later rotation names the earlier one's secret among those it ended.
		previous := map[string]bool{}
		for _, r := range rotated {
			for _, p := range r.GetPrevious() {
				previous[p.GetId()] = true
			}
		}
		if !previous[oldID] || len(previous) != 2 {
			t.Errorf("rotations reported ending %v, want the old secret and the first rotation's", previous)
		}

		got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		read := got.GetEndpoint()
		codesSeen := make([]error, 2)
		for i, in := range instances {
			wg.Go(func() {
				upd := proto.CloneOf(read)
				upd.MaxBodyBytes = int64(1000 + i)
				_, codesSeen[i] = in.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: upd})
			})
		}
		wg.Wait()
		if (codesSeen[0] == nil) == (codesSeen[1] == nil) {
			t.Errorf("two updates from one read: %v, %v; want one applied and one ABORTED", codesSeen[0], codesSeen[1])
		}
		for _, err := range codesSeen {
			if err != nil {
				wantCode(t, err, codes.Aborted)
			}
		}

		retired := make([]*hookverifyv1.RetireSecretResponse, 2)
		for i, in := range instances {
			wg.Go(func() {
				retired[i], errs[i] = in.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shop", SecretId: oldID})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("RetireSecret #%d: %v", i, err)
			}
		}
		if !proto.Equal(retired[0].GetSecret().GetRetireTime(), retired[1].GetSecret().GetRetireTime()) {
			t.Errorf("two retirements answered different retire times: %v, %v", retired[0], retired[1])
		}

		want := map[string]int{"endpoint.create": 1, "secret.add": 1, "secret.rotate": 2, "endpoint.update": 1, "secret.retire": 1}
		if got := auditActions(t, e.instance, "shop"); !maps.Equal(got, want) {
			t.Errorf("audit actions %v, want %v", got, want)
		}
	})
}
