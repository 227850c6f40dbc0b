package server

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/hookverify/hookverify/storage"
)

// UpgradePrincipal is the actor the audit trail names for changes the server makes to stored
// data by itself when it starts.
var UpgradePrincipal = Principal{Name: "system:upgrade", Method: "none"}

// DigestStoredCredentialOptions rewrites endpoints that still hold a credential option as
// given (written before such options were stored as digests, see
// protocol.Protocol.CredentialOptions), so that it stays in the database as a digest only.
// Each rewrite is audited as an endpoint.update by UpgradePrincipal. It returns how many
// endpoints it rewrote; run it once the store is open, before serving.
//
// An update made through the API between this reading an endpoint and writing it back would
// be overwritten; the window is the start-up of a server meeting such an endpoint, once.
func (s *Server) DigestStoredCredentialOptions(ctx context.Context, st storage.Store) (int, error) {
	endpoints, err := st.ListEndpoints(ctx)
	if err != nil {
		return 0, err
	}
	ctx = WithPrincipal(ctx, UpgradePrincipal)
	rewritten := 0
	for _, e := range endpoints {
		prov, ok := s.protocols.Lookup(e.Provider)
		if !ok {
			continue
		}
		digested := prov.DigestCredentialOptions(e.Options)
		if maps.Equal(digested, e.Options) {
			continue
		}
		var names []string
		for _, k := range slices.Sorted(maps.Keys(digested)) {
			if digested[k] != e.Options[k] {
				names = append(names, k)
			}
		}
		e.Options, e.UpdatedAt = digested, s.clock()
		auditCtx, err := s.audited(ctx, "endpoint.update", e.ID, "", "options "+strings.Join(names, ", ")+" now stored as digests")
		if err != nil {
			return rewritten, err
		}
		if err := st.UpdateEndpoint(auditCtx, e); err != nil {
			return rewritten, err
		}
		s.cache.invalidate(e.ID)
		rewritten++
	}
	if rewritten > 0 {
		s.log.InfoContext(ctx, "credential options now stored as digests", "endpoints", rewritten)
	}
	return rewritten, nil
}
