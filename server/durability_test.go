package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestOperationKey proves that the operation key is server.OperationKey(scope, event id):
// the same on every redelivery (Stripe re-signs each retry), across secret rotation, for
// endpoints sharing a dedupe scope and after a restart on a reopened store; different for
// different events and scopes.
func TestOperationKey(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")
		id := eventID(p)
		first := e.accept(t, e.deliver(t, p, "shop", id, secret))
		if want := server.OperationKey("shop", id); first.GetOperationKey() != want {
			t.Fatalf("operation key %s, want server.OperationKey(scope, id) = %s", first.GetOperationKey(), want)
		}

		t.Run("Stripe retries re-signed with a new t=", func(t *testing.T) {
			for i := range 3 {
				e.clock.Advance(time.Duration(i+1) * time.Minute)
				retry := e.deliver(t, p, "shop", id, secret)
				e.duplicate(t, retry, first)
			}
		})

		t.Run("different events and scopes", func(t *testing.T) {
			other := e.accept(t, e.deliver(t, p, "shop", eventID(p), secret))
			if other.GetOperationKey() == first.GetOperationKey() || other.GetInboxId() == first.GetInboxId() {
				t.Fatalf("two events share operation key %s or inbox %s", other.GetOperationKey(), other.GetInboxId())
			}
			// The same event id in another scope is another event.
			elsewhere, _ := e.setup(t, p, "elsewhere")
			resp := e.accept(t, e.deliver(t, p, "elsewhere", id, elsewhere))
			if resp.GetOperationKey() == first.GetOperationKey() || resp.GetOperationKey() != server.OperationKey("elsewhere", id) {
				t.Fatalf("operation key %s in scope elsewhere, want %s", resp.GetOperationKey(), server.OperationKey("elsewhere", id))
			}
		})

		t.Run("across rotation", func(t *testing.T) {
			fresh := p.newSecret()
			resp, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "shop", Secret: fresh})
			if err != nil {
				t.Fatalf("RotateSecret: %v", err)
			}
			e.reject(t, e.deliver(t, p, "shop", id, secret), mismatch)
			dup := e.duplicate(t, e.deliver(t, p, "shop", id, fresh), first)
			if dup.GetSecretId() != resp.GetSecret().GetId() {
				t.Fatalf("secret_id %s, want the new secret %s", dup.GetSecretId(), resp.GetSecret().GetId())
			}
			secret = fresh
		})

		t.Run("shared dedupe scope", func(t *testing.T) {
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "eu", Provider: "stripe", DedupeScope: "acme"})
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "us", Provider: "stripe", DedupeScope: "acme"})
			eu, us := p.newSecret(), p.newSecret()
			e.addSecret(t, "eu", eu)
			e.addSecret(t, "us", us)
			for _, order := range [][2]string{{"eu", "us"}, {"us", "eu"}} {
				shared := eventID(p)
				secrets := map[string]string{"eu": eu, "us": us}
				firstResp := e.accept(t, e.deliver(t, p, order[0], shared, secrets[order[0]]))
				if want := server.OperationKey("acme", shared); firstResp.GetOperationKey() != want {
					t.Fatalf("operation key %s, want OperationKey(acme, id) = %s", firstResp.GetOperationKey(), want)
				}
				e.duplicate(t, e.deliver(t, p, order[1], shared, secrets[order[1]]), firstResp)
				d, err := e.store.GetDelivery(t.Context(), firstResp.GetInboxId())
				if err != nil {
					t.Fatal(err)
				}
				if d.EndpointID != order[0] || d.Scope != "acme" {
					t.Fatalf("inbox record of endpoint %s in scope %s, want %s in acme", d.EndpointID, d.Scope, order[0])
				}
			}
			if n, err := e.store.CountDeliveries(t.Context(), "acme"); err != nil || n != 2 {
				t.Fatalf("CountDeliveries(acme) = %d, %v; want 2", n, err)
			}
		})

		t.Run("after a restart on a reopened store", func(t *testing.T) {
			if err := e.store.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			e.store = openStore(t, b, e.dsn)
			restarted := e.start(t, e.store)
			e.clock.Advance(time.Hour)
			restarted.duplicate(t, e.deliver(t, p, "shop", id, secret), first)
		})
	})
}

// TestHealthAndStoreLifecycle proves that before SetStore every call that needs storage is
// UNAVAILABLE (never a verdict) and health reports NOT_SERVING for service "", that SetStore
// makes the server SERVING and working, and that SetStore(nil) undoes it.
func TestHealthAndStoreLifecycle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.newDatabase(t)
		e := newEnvOn(t, b, dsn, nil)
		p := githubProvider
		secret := p.newSecret()
		req := e.deliver(t, p, "gh", eventID(p), secret)

		wantHealth(t, e.instance, healthpb.HealthCheckResponse_NOT_SERVING)
		_, err := e.call(t, req)
		wantCode(t, err, codes.Unavailable)
		_, err = e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "gh", Provider: "github"}})
		wantCode(t, err, codes.Unavailable)
		_, err = e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
		wantCode(t, err, codes.Unavailable)

		e.store = openStore(t, b, dsn)
		e.srv.SetStore(e.store)
		wantHealth(t, e.instance, healthpb.HealthCheckResponse_SERVING)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "gh", Provider: "github"})
		e.addSecret(t, "gh", secret)
		e.accept(t, req)

		e.srv.SetStore(nil)
		wantHealth(t, e.instance, healthpb.HealthCheckResponse_NOT_SERVING)
		_, err = e.call(t, req)
		wantCode(t, err, codes.Unavailable)
	})
}

// TestHealthFollowsTheInboxMonitor: gRPC health agrees with /readyz. Once the inbox monitor
// cannot read storage, health reports NOT_SERVING (a health-checking balancer then stops
// sending deliveries that could only be answered UNAVAILABLE), and SERVING again once it can.
// The monitor never overrides Shutdown, nor the NOT_SERVING of a server without a store.
func TestHealthFollowsTheInboxMonitor(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const (
			serving    = healthpb.HealthCheckResponse_SERVING
			notServing = healthpb.HealthCheckResponse_NOT_SERVING
		)
		e, outage := newEnvWithStatsOutage(t, b, nil)
		web := httptest.NewServer(e.srv.HTTPHandler())
		t.Cleanup(web.Close)
		readyz := func() int {
			t.Helper()
			resp, err := http.Get(web.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		e.srv.RefreshInboxDepth(t.Context())
		wantHealth(t, e.instance, serving)

		outage.down.Store(true)
		e.srv.RefreshInboxDepth(t.Context())
		wantHealth(t, e.instance, notServing)
		outage.down.Store(false)
		e.srv.RefreshInboxDepth(t.Context())
		wantHealth(t, e.instance, serving)

		t.Run("no store yet, or none any more", func(t *testing.T) {
			none := e.start(t, nil)
			none.srv.RefreshInboxDepth(t.Context())
			wantHealth(t, none, notServing)
			other := e.start(t, outage)
			other.srv.SetStore(nil)
			other.srv.RefreshInboxDepth(t.Context())
			wantHealth(t, other, notServing)
		})
		t.Run("after Shutdown", func(t *testing.T) {
			stopping := e.start(t, outage)
			outage.down.Store(true)
			stopping.srv.RefreshInboxDepth(t.Context())
			wantHealth(t, stopping, notServing)
			stopping.srv.Shutdown()
			outage.down.Store(false)
			stopping.srv.RefreshInboxDepth(t.Context())
			wantHealth(t, stopping, notServing)
		})

		// A real failure: the store closed. /readyz and health agree.
		if code := readyz(); code != 200 {
			t.Fatalf("/readyz = %d, want 200", code)
		}
		if err := outage.Store.Close(); err != nil {
			t.Fatal(err)
		}
		e.srv.RefreshInboxDepth(t.Context())
		if code := readyz(); code != 503 {
			t.Errorf("/readyz with the store closed = %d, want 503", code)
		}
		wantHealth(t, e.instance, notServing)
	})
}

func wantHealth(t *testing.T, in *instance, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	resp, err := in.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: ""})
	if err != nil {
		t.Fatalf("health Check: %v", err)
	}
	if resp.GetStatus() != want {
		t.Fatalf("health %s, want %s", resp.GetStatus(), want)
	}
}

// TestStorageDown proves that a store that fails under a running server is answered with
// gRPC UNAVAILABLE, never with a verdict: for SQLite a closed store, for PostgreSQL a stopped
// cluster — after which the same server, without a restart, accepts again once the cluster is
// back.
func TestStorageDown(t *testing.T) {
	t.Parallel()
	t.Run("sqlite closed under the server", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, backends[0])
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")
		known := e.deliver(t, p, "shop", eventID(p), secret)
		first := e.accept(t, known)
		// A second instance on the same store without the claim cache, its endpoint cache
		// warmed by a redelivery (which it answers from the store and does not remember).
		e.options = func(o *server.Options) { o.ClaimCacheSize = -1 }
		forgetful := e.start(t, e.store)
		forgetful.duplicate(t, known, first)
		leased := lease(t, e, 1, time.Minute)
		if err := e.store.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		// An ack the store cannot do is UNAVAILABLE in its own result: the worker acks again.
		acks, err := e.inbox.AckMany(t.Context(), &hookverifyv1.AckManyRequest{Acks: []*hookverifyv1.AckRequest{
			{InboxId: leased[0].GetInboxId(), LeaseToken: leased[0].GetLeaseToken()}}})
		if err != nil || len(acks.GetResults()) != 1 || codes.Code(acks.GetResults()[0].GetCode()) != codes.Unavailable {
			t.Errorf("AckMany with the store closed = %v, %v; want one UNAVAILABLE result", acks, err)
		}
		if _, err := forgetful.call(t, known); status.Code(err) != codes.Unavailable {
			t.Errorf("redelivery, claim cache off: Verify = %v, want UNAVAILABLE", err)
		}
		// Until the server has seen the store fail, the instance that accepted the event answers
		// its redelivery from the claim it remembers: DUPLICATE, true, as the claim was committed.
		e.duplicate(t, known, first)
		// Once a call has failed, everything that needs the store, redeliveries included, is
		// UNAVAILABLE until a call succeeds again.
		for _, c := range []struct {
			name string
			req  *hookverifyv1.VerifyRequest
		}{
			{"new event", e.deliver(t, p, "shop", eventID(p), secret)},
			{"redelivery", known},
			{"no endpoint", withEndpoint(known, "nope")},
		} {
			if _, err := e.call(t, c.req); status.Code(err) != codes.Unavailable {
				t.Errorf("%s: Verify = %v, want UNAVAILABLE", c.name, err)
			}
		}
		// A forgery needs no storage to be refused: the endpoint and its secrets are cached
		// (server.DefaultCacheTTL), so it is rejected; what matters is that it is never accepted.
		resp, err := e.call(t, e.deliver(t, p, "shop", eventID(p), p.newSecret()))
		if status.Code(err) != codes.Unavailable && resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_REJECTED {
			t.Errorf("forged: Verify = %v, %v; want REJECTED or UNAVAILABLE", resp, err)
		}
		_, err = e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "shop"})
		wantCode(t, err, codes.Unavailable)
	})

	t.Run("postgres stopped and started", func(t *testing.T) {
		t.Parallel()
		cluster := pgtest.Start(t)
		dsn := cluster.NewDatabase(t)
		b := backends[1]
		e := newEnvOn(t, b, dsn, openStore(t, b, dsn))
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")
		known := e.deliver(t, p, "shop", eventID(p), secret)
		first := e.accept(t, known)

		cluster.Stop(t)
		// The inbox monitor sees the outage: health NOT_SERVING (TestHealthFollowsTheInboxMonitor).
		e.srv.RefreshInboxDepth(t.Context())
		wantHealth(t, e.instance, healthpb.HealthCheckResponse_NOT_SERVING)
		// A redelivery this instance remembers, its endpoint cached: no Verify store call has
		// failed, yet health has, so the claim cache is silent (server/claimhealth_test.go).
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		resp, err := e.verifier.Verify(ctx, known)
		cancel()
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("redelivery with PostgreSQL stopped and health NOT_SERVING: Verify = %v, %v; want UNAVAILABLE", resp, err)
		}
		pending := e.deliver(t, p, "shop", eventID(p), secret)
		ctx, cancel = context.WithTimeout(t.Context(), 30*time.Second)
		resp, err = e.verifier.Verify(ctx, pending)
		cancel()
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("new event with PostgreSQL stopped: Verify = %v, %v; want UNAVAILABLE", resp, err)
		}
		// The failure seen, a redelivery of the event accepted before is UNAVAILABLE too, though
		// the instance remembers its claim.
		ctx, cancel = context.WithTimeout(t.Context(), 30*time.Second)
		resp, err = e.verifier.Verify(ctx, known)
		cancel()
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("redelivery with PostgreSQL stopped: Verify = %v, %v; want UNAVAILABLE", resp, err)
		}

		cluster.Start(t)
		// The pool may need a few attempts to replace its dead connections; every answer
		// until then must still be UNAVAILABLE, and the first real answer must be ACCEPTED.
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			resp, err := e.verifier.Verify(ctx, pending)
			cancel()
			if err == nil {
				checkReply(t, resp)
				if resp.GetVerdict() != accepted {
					t.Fatalf("first answer after the restart: %s %s (%s), want ACCEPTED", resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail())
				}
				break
			}
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("Verify while PostgreSQL restarts = %v, want UNAVAILABLE or an answer", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server still answers UNAVAILABLE 30s after PostgreSQL restarted: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		e.duplicate(t, known, first)
		e.srv.RefreshInboxDepth(t.Context())
		wantHealth(t, e.instance, healthpb.HealthCheckResponse_SERVING)
	})
}

// TestOperationKeyDerivationIsPinned holds server.OperationKey to the derivation README
// documents ("op_" and the first 16 bytes, in lowercase hex, of SHA-256("hookverify operation
// key v1" NUL scope NUL event id)), on values computed outside Go (sha256sum). The other tests
// compare answers with server.OperationKey itself, so a changed derivation passed them all,
// while workers and downstream systems that derive or store keys would see other keys after an
// upgrade.
func TestOperationKeyDerivationIsPinned(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ scope, eventID, want string }{
		// printf 'hookverify operation key v1\0shop\0evt_1NG8Du2eZvKYlo2CqrgwL4bX' | sha256sum
		{"shop", "evt_1NG8Du2eZvKYlo2CqrgwL4bX", "op_eddd45d9a9e5b0dc93eacec0cf146df1"},
		// printf 'hookverify operation key v1\0\0' | sha256sum
		{"", "", "op_ddd0ce00d3e0b802fefaf9679f5e3054"},
	} {
		if got := server.OperationKey(c.scope, c.eventID); got != c.want {
			t.Errorf("OperationKey(%q, %q) = %s, want %s (README, \"Operation key derivation\")", c.scope, c.eventID, got, c.want)
		}
	}
}
