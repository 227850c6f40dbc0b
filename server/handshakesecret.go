package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// keepHandshakeSecret adds the secret a provider handed over in its handshake (Asana's
// X-Hook-Secret, which Asana shows nowhere else) to the endpoint, when the endpoint asks for
// one (protocol.HandshakeSecretUntilOption, still ahead of now) and has no secret in force or
// scheduled. Otherwise it does nothing: the handshake is unauthenticated by the provider's
// design, so a secret from any other handshake would let its sender forge deliveries.
//
// The request is consumed first, in one transaction that reads the endpoint and its secrets
// as stored (ModifyEndpoint): of two handshakes at once, on any instances, one alone keeps
// its secret. A failure is an error, so that the handshake is not answered: the provider then
// fails the webhook's creation rather than sign with a secret nobody holds, and the operator
// asks again (a failure after the request was consumed leaves no secret and no request).
func (s *Server) keepHandshakeSecret(ctx context.Context, cached *cachedEndpoint, secret string, now time.Time) error {
	e := cached.endpoint
	inForce := func(secrets []storage.Secret) bool {
		return slices.ContainsFunc(secrets, func(sec storage.Secret) bool { return !sec.EndedAt(now) })
	}
	if !handshakeSecretWanted(e, now) {
		return nil
	}
	sec, err := s.sealSecret(e, secret)
	if err != nil {
		return err
	}
	st, err := s.storage()
	if err != nil {
		return err
	}
	consumeCtx, err := s.audited(ctx, "endpoint.update", e.ID, "", "")
	if err != nil {
		return err
	}
	errNotWanted := errors.New("the endpoint does not ask for a handshake's secret")
	_, err = st.ModifyEndpoint(consumeCtx, e.ID, func(current storage.Endpoint, secrets []storage.Secret) (storage.Endpoint, string, error) {
		if !handshakeSecretWanted(current, now) || inForce(secrets) {
			return storage.Endpoint{}, "", errNotWanted
		}
		next := current
		next.Options = maps.Clone(current.Options)
		delete(next.Options, protocol.HandshakeSecretUntilOption)
		next.UpdatedAt = now
		return next, endpointChanges(current, next), nil
	})
	switch {
	case errors.Is(err, errNotWanted), errors.Is(err, storage.ErrNotFound):
		return nil
	case err != nil:
		return s.storageStatus(ctx, "keep the handshake's secret", err)
	}
	s.cache.invalidate(e.ID)
	s.endpointRows.invalidate(e.ID)
	addCtx, err := s.audited(ctx, "secret.add", e.ID, sec.ID, describeSecret(sec)+" from=handshake")
	if err != nil {
		return err
	}
	if err := st.AddSecret(addCtx, sec, nil); err != nil {
		return s.storageStatus(ctx, "keep the handshake's secret", err)
	}
	s.cache.invalidate(e.ID)
	s.log.InfoContext(ctx, "secret taken from the provider's handshake", "endpoint", e.ID, "secret_id", sec.ID, "fingerprint", sec.Fingerprint)
	return nil
}

// handshakeSecretWanted reports whether e asks for the secret of a handshake at now.
func handshakeSecretWanted(e storage.Endpoint, now time.Time) bool {
	until, err := time.Parse(time.RFC3339, e.Options[protocol.HandshakeSecretUntilOption])
	return err == nil && now.Before(until)
}
