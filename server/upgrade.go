package server

import (
	"context"
	"errors"
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
// endpoints it rewrote; run it once the store is open, before serving. Each rewrite digests
// the endpoint as stored when it is written (storage ModifyEndpoint), so an update made
// through the API meanwhile, by another instance, is kept.
func (s *Server) DigestStoredCredentialOptions(ctx context.Context, st storage.Store) (int, error) {
	endpoints, err := st.ListEndpoints(ctx)
	if err != nil {
		return 0, err
	}
	ctx = WithPrincipal(ctx, UpgradePrincipal)
	rewritten := 0
	for _, listed := range endpoints {
		prov, ok := s.protocols.Lookup(listed.Provider)
		if !ok || maps.Equal(prov.DigestCredentialOptions(listed.Options), listed.Options) {
			continue
		}
		auditCtx, err := s.audited(ctx, "endpoint.update", listed.ID, "", "")
		if err != nil {
			return rewritten, err
		}
		now := s.clock()
		_, err = st.ModifyEndpoint(auditCtx, listed.ID, func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
			digested := prov.DigestCredentialOptions(current.Options)
			if maps.Equal(digested, current.Options) {
				return storage.Endpoint{}, "", errAlreadyDigested
			}
			var names []string
			for _, k := range slices.Sorted(maps.Keys(digested)) {
				if digested[k] != current.Options[k] {
					names = append(names, k)
				}
			}
			current.Options, current.UpdatedAt = digested, now
			return current, "options " + strings.Join(names, ", ") + " now stored as digests", nil
		})
		switch {
		case errors.Is(err, errAlreadyDigested), errors.Is(err, storage.ErrNotFound):
			continue // done by another instance meanwhile, or the endpoint deleted
		case err != nil:
			return rewritten, err
		}
		s.cache.invalidate(listed.ID)
		rewritten++
	}
	if rewritten > 0 {
		s.log.InfoContext(ctx, "credential options now stored as digests", "endpoints", rewritten)
	}
	return rewritten, nil
}

// errAlreadyDigested stops a rewrite that another instance made first: nothing to write.
var errAlreadyDigested = errors.New("credential options already stored as digests")

// withCredentialDigests returns e with each credential option that is stored as given
// replaced by a digest of it, for answers and the audit trail; e itself is not modified. The
// start-up rewrite does not make the database free of such options for good: during a
// rolling upgrade an instance of a release before digests, still serving, stores them as
// given (CreateEndpoint, UpdateEndpoint) until it restarts, and whatever reads the endpoint
// here must not show them. A digest sent back in an update keeps the token, as with one read
// from the database.
func (s *Server) withCredentialDigests(e storage.Endpoint) storage.Endpoint {
	if prov, ok := s.protocols.Lookup(e.Provider); ok {
		e.Options = prov.DigestCredentialOptions(e.Options)
	}
	return e
}

// UnreadableSecrets counts the secrets that are in force now or scheduled for later and are
// sealed under a master key this instance does not hold, and names those keys. Deliveries
// signed with them are answered UNAVAILABLE here (it cannot tell a forgery from a genuine
// delivery it cannot check), so serve warns at start: the master-key runbook half done (an
// instance restarted with the new key alone before rekey finished), or instances sharing a
// database with different keys. It reads every endpoint's secrets: run it once, in the
// background.
func (s *Server) UnreadableSecrets(ctx context.Context, st storage.Store) (count int, keyIDs []string, err error) {
	endpoints, err := st.ListEndpoints(ctx)
	if err != nil {
		return 0, nil, err
	}
	now := s.clock()
	missing := map[string]bool{}
	for _, e := range endpoints {
		secrets, err := st.ListSecrets(ctx, e.ID)
		if err != nil {
			return 0, nil, err
		}
		for _, sec := range secrets {
			if sec.EndedAt(now) || s.keyring.Has(sec.KeyID) {
				continue
			}
			count++
			missing[sec.KeyID] = true
		}
	}
	return count, slices.Sorted(maps.Keys(missing)), nil
}
