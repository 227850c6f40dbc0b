package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// listsAGoneEndpoint is a store whose endpoint listing still names one that is no longer in
// the database: listed just before another instance removed it.
type listsAGoneEndpoint struct {
	storage.Store
	gone storage.Endpoint
}

func (l *listsAGoneEndpoint) ListEndpoints(ctx context.Context) ([]storage.Endpoint, error) {
	list, err := l.Store.ListEndpoints(ctx)
	return append(list, l.gone), err
}

// TestStartUpDigestSkipsAnEndpointGoneMeanwhile proves that the start-up rewrite of credential
// options passes over an endpoint that was listed but is gone when it is rewritten, and still
// rewrites the others: failing there, the server refused to start over an endpoint it had
// nothing left to do for.
func TestStartUpDigestSkipsAnEndpointGoneMeanwhile(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		legacy := func(id string) storage.Endpoint {
			return storage.Endpoint{ID: id, Provider: "meta", DedupeScope: id, TimestampTolerance: 5 * time.Minute,
				MaxBodyBytes: server.DefaultMaxBodyBytes, Options: map[string]string{"verify_token": "legacy-token-" + id},
				CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
		}
		if err := e.store.CreateEndpoint(t.Context(), legacy("meta-kept")); err != nil {
			t.Fatal(err)
		}
		st := &listsAGoneEndpoint{Store: e.store, gone: legacy("meta-gone")}
		n, err := e.srv.DigestStoredCredentialOptions(t.Context(), st)
		if err != nil || n != 1 {
			t.Fatalf("start-up rewrite with an endpoint gone meanwhile: %d, %v; want 1 rewritten, no error", n, err)
		}
		stored, err := e.store.GetEndpoint(t.Context(), "meta-kept")
		if err != nil {
			t.Fatal(err)
		}
		if v := stored.Options["verify_token"]; v == "legacy-token-meta-kept" {
			t.Fatalf("verify_token still stored as given: %q", v)
		}
	})
}
