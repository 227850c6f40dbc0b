package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestRotationEndsEarlierSecretsExactlyOverlapAfterNow proves that a secret's create_time is
// the server's clock as it is, not rounded, and that a rotation ends the earlier secrets at
// exactly that time plus the overlap asked for: rounded down, the old secret stopped
// authenticating up to a second before the operator was told it would.
func TestRotationEndsEarlierSecretsExactlyOverlapAfterNow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"})
		// Off a whole second, to the microsecond the stores keep.
		e.clock.Advance(1500*time.Millisecond + 250*time.Microsecond)
		added, err := e.admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "shop", Secret: stripeProvider.newSecret()})
		if err != nil {
			t.Fatalf("AddSecret: %v", err)
		}
		if got, want := added.GetSecret().GetCreateTime().AsTime(), e.clock.Now(); !got.Equal(want) {
			t.Fatalf("added secret's create_time %v, want the server's clock %v", got, want)
		}

		e.clock.Advance(2*time.Second + 750*time.Microsecond)
		const overlap = time.Hour
		rotated, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "shop", Secret: stripeProvider.newSecret(), Overlap: durationpb.New(overlap)})
		if err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		now := e.clock.Now()
		if got := rotated.GetSecret().GetCreateTime().AsTime(); !got.Equal(now) {
			t.Fatalf("new secret's create_time %v, want the server's clock %v", got, now)
		}
		if len(rotated.GetPrevious()) != 1 {
			t.Fatalf("rotation ended %d secrets, want 1", len(rotated.GetPrevious()))
		}
		if got, want := rotated.GetPrevious()[0].GetNotAfter().AsTime(), now.Add(overlap); !got.Equal(want) {
			t.Fatalf("previous secret ends at %v, want now + overlap %v", got, want)
		}
		listed, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "shop"})
		if err != nil {
			t.Fatalf("ListSecrets: %v", err)
		}
		for _, s := range listed.GetSecrets() {
			switch s.GetId() {
			case added.GetSecret().GetId():
				if !s.GetCreateTime().AsTime().Equal(added.GetSecret().GetCreateTime().AsTime()) || !s.GetNotAfter().AsTime().Equal(now.Add(overlap)) {
					t.Fatalf("stored previous secret created %v ending %v, want %v ending %v", s.GetCreateTime().AsTime(), s.GetNotAfter().AsTime(), added.GetSecret().GetCreateTime().AsTime(), now.Add(overlap))
				}
			case rotated.GetSecret().GetId():
				if !s.GetCreateTime().AsTime().Equal(now) {
					t.Fatalf("stored new secret created %v, want %v", s.GetCreateTime().AsTime(), now)
				}
			}
		}
	})
}

// TestRotationWithTheSmallestNegativeOverlapIsRefused proves that any negative overlap, down
// to a nanosecond, is refused and changes nothing: the earlier secrets are not ended.
func TestRotationWithTheSmallestNegativeOverlapIsRefused(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		_, id := e.setup(t, stripeProvider, "shop")
		_, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "shop", Secret: stripeProvider.newSecret(), Overlap: durationpb.New(-time.Nanosecond)})
		wantCode(t, err, codes.InvalidArgument)
		listed, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "shop"})
		if err != nil {
			t.Fatalf("ListSecrets: %v", err)
		}
		if len(listed.GetSecrets()) != 1 || listed.GetSecrets()[0].GetId() != id || listed.GetSecrets()[0].GetNotAfter() != nil {
			t.Fatalf("after a refused rotation the secrets are %v, want %s alone, not ending", listed.GetSecrets(), id)
		}
	})
}
