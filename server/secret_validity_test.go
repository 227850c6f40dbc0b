package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestAddSecretRefusesAnEmptyWindow: a secret whose not_after equals its not_before would never
// be in force (valid from not_before, ended at not_after): refused as InvalidArgument, and
// nothing is stored.
func TestAddSecretRefusesAnEmptyWindow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "empty-window", Provider: "stripe"})
		at := timestamppb.New(e.clock.Now().Add(time.Hour))
		_, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "empty-window",
			Secret: stripeProvider.newSecret(), NotBefore: at, NotAfter: at})
		wantCode(t, err, codes.InvalidArgument)
		wantStates(t, e, "empty-window")
	})
}

// TestRetireSecretRequiresBothIDs: a retirement naming the endpoint but no secret (or the
// secret but no endpoint) is an invalid request, not an unknown secret.
func TestRetireSecretRequiresBothIDs(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "retire-ids", Provider: "stripe"})
		e.addSecret(t, "retire-ids", stripeProvider.newSecret())
		_, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "retire-ids"})
		wantCode(t, err, codes.InvalidArgument)
		_, err = e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{SecretId: "sec_000000000000000000000000"})
		wantCode(t, err, codes.InvalidArgument)
		wantStates(t, e, "retire-ids", stateActive)
	})
}
