package server_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestEndpointCallsWithoutAnIDAreInvalid: an endpoint call that names no endpoint is the
// caller's mistake, INVALID_ARGUMENT, not NOT_FOUND (which a script reads as "create it").
func TestEndpointCallsWithoutAnIDAreInvalid(t *testing.T) {
	e := newEnv(t, backends[0])
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "github"})
	_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Provider: "github"}})
	wantCode(t, err, codes.InvalidArgument)
	_, err = e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{})
	wantCode(t, err, codes.InvalidArgument)
}

// TestEndpointUpdateWithAnInvalidUpdateTimeIsInvalid: an update_time that is no valid
// timestamp (before year 1) is refused INVALID_ARGUMENT, not read as some time and answered
// ABORTED, which sends a client's read-modify-write loop reading and retrying forever.
func TestEndpointUpdateWithAnInvalidUpdateTimeIsInvalid(t *testing.T) {
	e := newEnv(t, backends[0])
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "github"})
	_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
		Id: "shop", Provider: "github", UpdateTime: &timestamppb.Timestamp{Seconds: -70000000000}}})
	wantCode(t, err, codes.InvalidArgument)
}

// TestEndpointUpdateTimeComparedAtStoredPrecision: update_time is compared at the microsecond
// precision update times are stored with: an update_time within the stored one's microsecond
// (a client's clock type carrying nanoseconds) is the same time, and the update applies.
func TestEndpointUpdateTimeComparedAtStoredPrecision(t *testing.T) {
	e := newEnv(t, backends[0])
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "github"})
	got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	ep := got.GetEndpoint()
	ep.UpdateTime = &timestamppb.Timestamp{Seconds: ep.GetUpdateTime().GetSeconds(), Nanos: ep.GetUpdateTime().GetNanos() + 999}
	ep.MaxBodyBytes = 4096
	if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: ep}); err != nil {
		t.Fatalf("update with update_time within the stored microsecond: %v", err)
	}
}
