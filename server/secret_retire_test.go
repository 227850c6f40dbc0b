package server_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

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
