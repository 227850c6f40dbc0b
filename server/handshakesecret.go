package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// keepHandshakeSecret adds the secret a provider handed over in its handshake (Asana's
// X-Hook-Secret, which Asana shows nowhere else) to the endpoint, when the endpoint asks for
// one (protocol.HandshakeSecretUntilOption, still ahead of now) and has no secret in force or
// scheduled. Otherwise it does nothing: the handshake is unauthenticated by the provider's
// design, so a secret from any other handshake would let its sender forge deliveries. An
// endpoint with no secret in force whose cached copy does not ask is read as stored first, so
// that an option set through another instance is seen at once, not after --cache-ttl.
//
// The request is consumed first, in one transaction that reads the endpoint and its secrets
// as stored (ModifyEndpoint): of two handshakes at once, on any instances, one alone keeps
// its secret. A failure is an error, so that the handshake is not answered: the provider then
// fails the webhook's creation rather than sign with a secret nobody holds, and the operator
// asks again (a failure after the request was consumed leaves no secret and no request). The
// error is one edges do not retry (keepFailed): retried, the call found the request consumed
// and echoed the handshake, keeping nothing.
func (s *Server) keepHandshakeSecret(ctx context.Context, cached *cachedEndpoint, secret string, now time.Time) error {
	e := cached.endpoint
	inForce := func(secrets []storage.Secret) bool {
		return slices.ContainsFunc(secrets, func(sec storage.Secret) bool { return !sec.EndedAt(now) })
	}
	st, err := s.storage()
	if err != nil {
		return err
	}
	if !handshakeSecretWanted(e, now) {
		if slices.ContainsFunc(cached.keys, func(k cachedKey) bool { return !k.secret.EndedAt(now) }) {
			return nil
		}
		// The cache may have read the endpoint before the operator set the option through
		// another instance (within --cache-ttl): answered from it, the handshake would be
		// echoed and its secret not kept, and Asana would sign with a secret nobody holds. An
		// endpoint with no secret in force is read as stored instead. Handshakes are rare, and
		// one forged to an endpoint in use (a secret in force) still costs no store read.
		fresh, err := st.GetEndpoint(ctx, e.ID)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return nil
		case err != nil:
			// Nothing consumed yet: UNAVAILABLE, which edges retry, is safe here.
			return s.storageStatus(ctx, "read the endpoint of a handshake", err)
		}
		if !handshakeSecretWanted(fresh, now) {
			return nil
		}
		e = fresh
	}
	sec, err := s.sealSecret(e, secret)
	if err != nil {
		return err
	}
	consumeCtx, err := s.audited(ctx, "endpoint.update", e.ID, "", "")
	if err != nil {
		return err
	}
	errNotWanted := errors.New("the endpoint does not ask for a handshake's secret")
	_, err = st.ModifyEndpoint(consumeCtx, e.ID, func(current storage.Endpoint, secrets []storage.Secret) (storage.Endpoint, string, error) {
		// A disabled endpoint takes nothing, though the cache this call read it from may not
		// know yet (disabled through another instance, within --cache-ttl).
		if current.Disabled || !handshakeSecretWanted(current, now) || inForce(secrets) {
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
		return keepFailed(s.storageStatus(ctx, "keep the handshake's secret", err))
	}
	s.cache.invalidate(e.ID)
	s.endpointRows.invalidate(e.ID)
	addCtx, err := s.audited(ctx, "secret.add", e.ID, sec.ID, describeSecret(sec)+" from=handshake")
	if err != nil {
		return err
	}
	if err := st.AddSecret(addCtx, sec, nil); err != nil {
		return keepFailed(s.storageStatus(ctx, "keep the handshake's secret", err))
	}
	s.cache.invalidate(e.ID)
	s.log.InfoContext(ctx, "secret taken from the provider's handshake", "endpoint", e.ID, "secret_id", sec.ID, "fingerprint", sec.Fingerprint)
	return nil
}

// maxHandshakeSecretWindow bounds how far ahead protocol.HandshakeSecretUntilOption may be
// set: the webhook is created within minutes, and while the window is open anyone who knows
// the URL can hand over a secret.
const maxHandshakeSecretWindow = time.Hour

// handshakeSecretWanted reports whether e asks for the secret of a handshake at now.
func handshakeSecretWanted(e storage.Endpoint, now time.Time) bool {
	until, err := time.Parse(time.RFC3339, e.Options[protocol.HandshakeSecretUntilOption])
	return err == nil && now.Before(until)
}

// keepFailed turns the UNAVAILABLE of a store that failed while keeping a handshake's secret
// into INTERNAL, which edges do not retry (client.RetryPolicy, docs/clients.md) and answer
// 500. The request may have been consumed already (by the call that failed, or by a commit
// whose answer was lost), and a retry would then find no request and echo the handshake: the
// provider would create its webhook signing with a secret that nobody holds and that it shows
// nowhere else. Not answered, the creation fails at the provider, and the operator asks again.
func keepFailed(err error) error {
	if status.Code(err) != codes.Unavailable {
		return err
	}
	return status.Errorf(codes.Internal, "%s; the handshake is not answered, so that the provider does not create a webhook whose secret was not kept: set %s again if it is gone, and create the webhook again",
		status.Convert(err).Message(), protocol.HandshakeSecretUntilOption)
}
