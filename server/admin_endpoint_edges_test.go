package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// TestCreatedEndpointIsSeenAtOnceAfterAnUnknownID: a request to an endpoint id that does not
// exist yet is remembered as unknown (the cache keeps unknown ids too), and creating the
// endpoint through the same instance must end that at once: Asana's handshake follows the
// creation within seconds, and answered as for an unknown endpoint, its secret, shown
// nowhere else, would be lost.
func TestCreatedEndpointIsSeenAtOnceAfterAnUnknownID(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		// A probe (or an early handshake) before the endpoint exists.
		_, _ = e.verifier.Verify(t.Context(), asanaHandshake("late", "early-secret-0123456789abcdef"))
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "late", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		resp, err := e.verifier.Verify(t.Context(), asanaHandshake("late", "asana-secret-0123456789abcdef"))
		if err != nil {
			t.Fatalf("handshake right after the endpoint was created: %v", err)
		}
		if resp.GetReply() == nil {
			t.Fatalf("handshake answered %v, want the echo", resp)
		}
		if got := listSecrets(t, e.store, "late"); len(got) != 1 {
			t.Fatalf("endpoint holds %d secrets after the handshake, want the handshake's", len(got))
		}
	})
}

// TestListEndpointsLastPageHasNoToken: a page that ends the list carries no next_page_token,
// even when it is full, so that a caller paging through stops there rather than asking for an
// empty page; a page with more after it carries one.
func TestListEndpointsLastPageHasNoToken(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, id := range []string{"ep-a", "ep-b", "ep-c"} {
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: id, Provider: "github"})
		}
		first, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(first.GetEndpoints()) != 2 || first.GetNextPageToken() == "" {
			t.Fatalf("first page: %d endpoints, token %q; want 2 and a token", len(first.GetEndpoints()), first.GetNextPageToken())
		}
		last, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageSize: 2, PageToken: first.GetNextPageToken()})
		if err != nil {
			t.Fatal(err)
		}
		if len(last.GetEndpoints()) != 1 || last.GetEndpoints()[0].GetId() != "ep-c" || last.GetNextPageToken() != "" {
			t.Fatalf("last page: %v, token %q; want ep-c alone and no token", last.GetEndpoints(), last.GetNextPageToken())
		}
		whole, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(whole.GetEndpoints()) != 3 || whole.GetNextPageToken() != "" {
			t.Fatalf("a full page that ends the list: %d endpoints, token %q; want 3 and no token", len(whole.GetEndpoints()), whole.GetNextPageToken())
		}
	})
}

// TestEndpointUpdateRedactsUnderTheNewOptionsAtOnce: once an endpoint's options move its
// credential (shared-token's header), the instance that made the update hands deliveries out
// redacted where the new options put it at once, also when it had read the endpoint's row
// (not the endpoint with its secrets) for an earlier lease: not with the old options for the
// rest of the cache's TTL, showing workers the credential in clear.
func TestEndpointUpdateRedactsUnderTheNewOptionsAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "tok", Provider: "shared-token", Options: map[string]string{"header": "X-Old-Token"}})
		const secret = "s3cret-token-value-0123456789"
		e.addSecret(t, "tok", secret)
		// Deliveries stored with their credential (by a release before claim-time redaction).
		store := func(n, header string) {
			t.Helper()
			d := storage.Delivery{InboxID: "inbox-" + n, Scope: "tok", EventID: "evt-" + n, EndpointID: "tok", OperationKey: "op-" + n,
				Method: "POST", URL: "https://hooks.example.com/tok", Headers: []storage.Header{{Name: header, Value: secret}},
				Body: []byte("{}"), ReceivedAt: e.clock.Now()}
			if r, err := e.store.Claim(t.Context(), d); err != nil || !r.Accepted {
				t.Fatalf("Claim: %+v, %v", r, err)
			}
		}
		worker := e.start(t, e.store)
		leaseOne := func() *hookverifyv1.InboxDelivery {
			t.Helper()
			resp, err := worker.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{VisibilityTimeout: durationpb.New(time.Minute)})
			if err != nil || len(resp.GetDeliveries()) != 1 {
				t.Fatalf("Lease = %v, %v; want one delivery", resp, err)
			}
			return resp.GetDeliveries()[0]
		}
		store("1", "x-old-token")
		leaseOne() // the worker reads the endpoint's row, with the old header

		_, err := worker.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
			Id: "tok", Options: map[string]string{"header": "X-New-Token"}}})
		if err != nil {
			t.Fatal(err)
		}
		store("2", "x-new-token")
		if hs := leaseOne().GetHeaders(); len(hs) != 1 || hs[0].GetValue() != server.Redacted {
			t.Errorf("after the update, headers %v; want x-new-token alone, %s", hs, server.Redacted)
		}
	})
}

// TestEndpointOptionsMayTakeExactlyTheirBound: an endpoint's options may take 1 MiB, keys and
// values together, and not a byte more.
func TestEndpointOptionsMayTakeExactlyTheirBound(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		const prefix = "https://hooks.example.com/"
		url := func(size int) map[string]string {
			return map[string]string{server.PublicURLOption: prefix + strings.Repeat("a", size-len(server.PublicURLOption)-len(prefix))}
		}
		if _, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
			Endpoint: &hookverifyv1.Endpoint{Id: "at-bound", Provider: "twilio", Options: url(1 << 20)}}); err != nil {
			t.Fatalf("options of exactly 1 MiB: %v, want created", err)
		}
		_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
			Endpoint: &hookverifyv1.Endpoint{Id: "over-bound", Provider: "twilio", Options: url(1<<20 + 1)}})
		wantCode(t, err, codes.InvalidArgument)
	})
}

// TestPublicURLWithoutHostRefused: public_url names the URL the provider signs; one without a
// host ("https:///hooks") can match no delivery, and is refused when set, not found out as
// every delivery rejected.
func TestPublicURLWithoutHostRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, u := range []string{"https:///hooks/tw", "https:hooks/tw"} {
			_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
				Endpoint: &hookverifyv1.Endpoint{Id: "tw", Provider: "twilio", Options: map[string]string{server.PublicURLOption: u}}})
			wantCode(t, err, codes.InvalidArgument)
		}
	})
}
