package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hookverify/hookverify/internal/hopbyhop"
	"github.com/hookverify/hookverify/internal/ident"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// maxIDLength bounds endpoint ids and dedupe scopes.
const maxIDLength = ident.MaxLength

// maxSecretBytes bounds a secret as given; provider secrets are far shorter, public keys too.
const maxSecretBytes = 8 << 10

// maxOptionsBytes bounds an endpoint's options, keys and values together. Without a bound
// (the server takes messages of 32 MiB) an endpoint passed a client's 4 MiB receive limit, and
// so did the audit event of an update, which lists the options before and after: every
// ListAuditEvents page reaching it failed, for every such caller, for good. At 1 MiB an
// endpoint, and any audit event, fits one answer (a public_url, the long option, is a URL).
const maxOptionsBytes = 1 << 20

// validID reports whether s may be an endpoint id or a dedupe scope (ident.Valid).
func validID(s string) bool { return ident.Valid(s) }

// CreateEndpoint validates, fills defaults and stores a new endpoint.
func (s *Server) CreateEndpoint(ctx context.Context, req *hookverifyv1.CreateEndpointRequest) (*hookverifyv1.CreateEndpointResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	e, err := s.endpointFromProto(req.GetEndpoint())
	if err != nil {
		return nil, err
	}
	now := s.clock()
	e.CreatedAt, e.UpdatedAt = now, now
	auditCtx, err := s.audited(ctx, "endpoint.create", e.ID, "", describeEndpoint(e))
	if err != nil {
		return nil, err
	}
	if err := st.CreateEndpoint(auditCtx, e); err != nil {
		if errors.Is(err, storage.ErrAlreadyExists) {
			return nil, status.Errorf(codes.AlreadyExists, "endpoint %q already exists", e.ID)
		}
		return nil, s.storageStatus(ctx, "create endpoint", err)
	}
	s.cache.invalidate(e.ID)
	s.endpointRows.invalidate(e.ID)
	s.log.InfoContext(ctx, "endpoint created", "endpoint", e.ID, "provider", e.Provider)
	s.warnToleranceOverWindow(ctx, e)
	return &hookverifyv1.CreateEndpointResponse{Endpoint: s.endpointToProto(e)}, nil
}

// GetEndpoint returns one endpoint.
func (s *Server) GetEndpoint(ctx context.Context, req *hookverifyv1.GetEndpointRequest) (*hookverifyv1.GetEndpointResponse, error) {
	e, err := s.loadEndpoint(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &hookverifyv1.GetEndpointResponse{Endpoint: s.endpointToProto(e)}, nil
}

// ListEndpoints lists the endpoints by id, a page at a time: the page token is the last
// listed id, after which the next page starts. Every endpoint in one answer passed the
// client's 4 MiB receive limit on a platform with an endpoint per tenant, and then no caller
// could list any. A request without page_size (as from a client older than pages) gets the
// first defaultEndpointPage, with a next_page_token when more follow.
func (s *Server) ListEndpoints(ctx context.Context, req *hookverifyv1.ListEndpointsRequest) (*hookverifyv1.ListEndpointsResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	limit, err := listPageSize(req.GetPageSize(), defaultEndpointPage, maxEndpointPage)
	if err != nil {
		return nil, err
	}
	after, err := parseEndpointToken(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	// One more than the page, so that the last page says it is the last without the caller
	// asking for an empty one.
	list, err := st.ListEndpointsPage(ctx, after, limit+1)
	if err != nil {
		return nil, s.storageStatus(ctx, "list endpoints", err)
	}
	more := len(list) > limit
	list = list[:min(len(list), limit)]
	endpoints := make([]*hookverifyv1.Endpoint, len(list))
	for i, e := range list {
		endpoints[i] = s.endpointToProto(e)
	}
	// An endpoint's options (a public_url) can be long: the page ends before the endpoint
	// that would pass the client's limit, and the next starts there.
	n := fittingItems(endpoints)
	resp := &hookverifyv1.ListEndpointsResponse{Endpoints: endpoints[:n]}
	if more || n < len(endpoints) {
		resp.NextPageToken = endpointPages.token(setsHash(), list[n-1].ID)
	}
	return resp, nil
}

// Page sizes of ListEndpoints.
const (
	defaultEndpointPage = 1000
	maxEndpointPage     = 1000
)

// endpointPages are ListEndpoints' page tokens: "e1:<hash of no filters>:<endpoint id>".
var endpointPages = pageTokens{version: "e1", rpc: "ListEndpoints", filters: "filters"}

// parseEndpointToken returns the id a page token names ("" for no token, which lists from
// the first), or INVALID_ARGUMENT for one this service did not give.
func parseEndpointToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	id, err := endpointPages.parse(token, setsHash())
	if err != nil {
		return "", err
	}
	if !validPlaceID(id) {
		return "", endpointPages.invalid()
	}
	return id, nil
}

// UpdateEndpoint replaces an endpoint's mutable settings; zero values mean defaults, as at
// creation. A request that carries update_time (as one made from a read of the endpoint does)
// applies only if the endpoint was not updated since: otherwise ABORTED, so that a client's
// read-modify-write (the CLI's endpoint update) never silently undoes a concurrent update.
func (s *Server) UpdateEndpoint(ctx context.Context, req *hookverifyv1.UpdateEndpointRequest) (*hookverifyv1.UpdateEndpointResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	in := req.GetEndpoint()
	if in.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "endpoint id is required")
	}
	// A pointer, not the zero time, says "no update_time": an endpoint stored without an
	// update time reads back as 0001-01-01T00:00:00Z, and sent back, that is a precondition too.
	var ifUpdatedAt *time.Time
	if ts := in.GetUpdateTime(); ts != nil {
		if !ts.IsValid() {
			return nil, status.Error(codes.InvalidArgument, "update_time is not a valid timestamp")
		}
		// Stored times have microsecond precision; clock() already truncates.
		t := ts.AsTime().UTC().Truncate(time.Microsecond)
		ifUpdatedAt = &t
	}
	// The detail is filled in by the store from the endpoint as it is when the change is
	// written (ModifyEndpoint), not as it was read before.
	auditCtx, err := s.audited(ctx, "endpoint.update", in.GetId(), "", "")
	if err != nil {
		return nil, err
	}
	now := s.clock()
	var refused error
	e, err := st.ModifyEndpoint(auditCtx, in.GetId(), func(current storage.Endpoint, secrets []storage.Secret) (storage.Endpoint, string, error) {
		next, err := s.updatedEndpoint(current, in, ifUpdatedAt, now)
		if err == nil && !maps.Equal(current.Options, next.Options) {
			if unreadable := s.secretsUnreadableUnder(current, secrets, next.Options, now); len(unreadable) > 0 {
				err = status.Errorf(codes.InvalidArgument, "with these options, secrets %s of endpoint %q (in force or scheduled) would no longer read as the keys they read as now, and every delivery they sign would be refused: retire them first (deliveries are then answered UNAVAILABLE, and retried, until a secret in the new form is added), or create a new endpoint with the new options sharing this one's dedupe_scope",
					strings.Join(unreadable, ", "), current.ID)
			}
		}
		refused = err
		if err != nil {
			return storage.Endpoint{}, "", err
		}
		// current may hold a credential option as given, which the audit trail must not.
		return next, endpointChanges(s.withCredentialDigests(current), next), nil
	})
	switch {
	case refused != nil:
		return nil, refused
	case errors.Is(err, storage.ErrNotFound):
		return nil, status.Errorf(codes.NotFound, "endpoint %q not found", in.GetId())
	case err != nil:
		return nil, s.storageStatus(ctx, "update endpoint", err)
	}
	s.cache.invalidate(e.ID)
	s.endpointRows.invalidate(e.ID)
	s.log.InfoContext(ctx, "endpoint updated", "endpoint", e.ID, "disabled", e.Disabled)
	s.warnToleranceOverWindow(ctx, e)
	return &hookverifyv1.UpdateEndpointResponse{Endpoint: s.endpointToProto(e)}, nil
}

// secretsUnreadableUnder returns the ids of current's secrets, in force or scheduled at now,
// that its protocol's CheckSecret reads as a key under current's options and refuses, or, once
// they have authenticated a delivery, reads as another key, under options (generic-hmac's key:
// raw, hex, base64, whsec; most hex text is base64 too, of other bytes): after such an update
// they would never match again, and a provider that drops 401s would lose every delivery. The secrets are those the
// store read with current, in the update's transaction, so a secret added meanwhile is either
// among them or checked against the options the update stores (see AddSecret). A secret this
// server cannot open (its master key unknown here) is not counted against the update. It runs
// in the store's transaction and only computes.
func (s *Server) secretsUnreadableUnder(current storage.Endpoint, secrets []storage.Secret, options map[string]string, now time.Time) []string {
	prov, ok := s.protocols.Lookup(current.Provider)
	if !ok || prov.CheckSecret == nil {
		return nil
	}
	var unreadable []string
	for _, sec := range secrets {
		if sec.EndedAt(now) {
			continue
		}
		plain, err := s.keyring.Open(sec.KeyID, sec.EndpointID, sec.ID, sec.Sealed)
		if err != nil {
			continue
		}
		// Only a secret that reads now counts: one stored before secret add checked the key
		// option may read under neither, and the update changes nothing for it.
		before, err := prov.CheckSecret(string(plain), current.Options)
		if err != nil {
			continue
		}
		after, err := prov.CheckSecret(string(plain), options)
		// Read as another key, it is lost only if the present reading is known to be right: it
		// has authenticated a delivery. One never used may be read wrongly now (key=raw, the
		// default, for a secret the provider hex-decodes): the update may be its fix.
		if err != nil || (!bytes.Equal(before, after) && !sec.LastUsedAt.IsZero()) {
			unreadable = append(unreadable, sec.ID)
		}
	}
	return unreadable
}

// updatedEndpoint is UpdateEndpoint's change: the settings in replacing current's, validated.
// It runs in the store's transaction, on the endpoint as stored then, and only computes.
func (s *Server) updatedEndpoint(current storage.Endpoint, in *hookverifyv1.Endpoint, ifUpdatedAt *time.Time, now time.Time) (storage.Endpoint, error) {
	if ifUpdatedAt != nil && !ifUpdatedAt.Equal(current.UpdatedAt) {
		return storage.Endpoint{}, status.Errorf(codes.Aborted, "endpoint %q changed since the read this update was made from (update_time %s, now %s): read it again and reapply the change, or send no update_time to replace it regardless",
			current.ID, ifUpdatedAt.Format(time.RFC3339Nano), current.UpdatedAt.Format(time.RFC3339Nano))
	}
	if in.GetProvider() != "" && in.GetProvider() != current.Provider {
		return storage.Endpoint{}, status.Error(codes.InvalidArgument, "provider cannot change; create a new endpoint (and share its dedupe_scope to keep deduplicating)")
	}
	// The dedupe scope is fixed at creation: changing it would restart deduplication and change
	// every operation key, breaking the promise that an event's key never changes. To move
	// deliveries to a new endpoint, create it with the old endpoint's scope instead.
	if in.GetDedupeScope() != "" && in.GetDedupeScope() != current.DedupeScope {
		return storage.Endpoint{}, status.Error(codes.InvalidArgument, "dedupe_scope cannot change (it would change operation keys); create a new endpoint sharing the scope instead")
	}
	withFixed := proto.CloneOf(in)
	withFixed.Provider, withFixed.DedupeScope = current.Provider, current.DedupeScope
	e, err := s.endpointFromProto(withFixed)
	if err != nil {
		return storage.Endpoint{}, err
	}
	e.CreatedAt, e.UpdatedAt = current.CreatedAt, now
	return e, nil
}

// AddSecret seals and stores a new secret for an endpoint.
func (s *Server) AddSecret(ctx context.Context, req *hookverifyv1.AddSecretRequest) (*hookverifyv1.AddSecretResponse, error) {
	e, err := s.loadEndpoint(ctx, req.GetEndpointId())
	if err != nil {
		return nil, err
	}
	notBefore, err := windowTime("not_before", req.GetNotBefore())
	if err != nil {
		return nil, err
	}
	notAfter, err := windowTime("not_after", req.GetNotAfter())
	if err != nil {
		return nil, err
	}
	if !notBefore.IsZero() && !notAfter.IsZero() && !notAfter.After(notBefore) {
		return nil, status.Error(codes.InvalidArgument, "not_after must be later than not_before")
	}
	// Such a secret would be stored ended: never in force, shown RETIRED at once, most likely
	// a mistyped date that the caller would otherwise find out only as rejected deliveries.
	if now := s.clock(); !notAfter.IsZero() && !notAfter.After(now) {
		return nil, status.Errorf(codes.InvalidArgument, "not_after %s is not after now (%s, the server's clock): the secret would never be in force",
			notAfter.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	sec, err := s.sealSecret(e, req.GetSecret())
	if err != nil {
		return nil, err
	}
	sec.NotBefore, sec.NotAfter = notBefore, notAfter
	auditCtx, err := s.audited(ctx, "secret.add", e.ID, sec.ID, describeSecret(sec))
	if err != nil {
		return nil, err
	}
	st, _ := s.storage()
	var refused error
	switch err := st.AddSecret(auditCtx, sec, s.secretReadsUnder(req.GetSecret(), &refused)); {
	case refused != nil:
		return nil, refused
	case err != nil:
		return nil, s.storageStatus(ctx, "add secret", err)
	}
	s.cache.invalidate(e.ID)
	s.endpointRows.invalidate(e.ID)
	s.log.InfoContext(ctx, "secret added", "endpoint", e.ID, "secret_id", sec.ID)
	return &hookverifyv1.AddSecretResponse{Secret: s.secretInfo(sec)}, nil
}

// windowTime reads an optional bound of a secret's validity window (the zero time when unset).
// A timestamp outside the range google.protobuf.Timestamp defines, or with nanos out of range,
// is refused: past the stores' microsecond encoding it would be stored as another time, and
// the stores would disagree on whether the secret is valid. The year-1 minimum is refused too,
// since the zero time reads back as "no limit".
func windowTime(field string, ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, nil
	}
	t := ts.AsTime().UTC().Truncate(time.Microsecond)
	if !ts.IsValid() || t.IsZero() {
		return time.Time{}, status.Errorf(codes.InvalidArgument, "%s must be a valid time between years 1 and 9999", field)
	}
	return t, nil
}

// RotateSecret adds a new secret valid at once and ends every earlier one at now + overlap.
func (s *Server) RotateSecret(ctx context.Context, req *hookverifyv1.RotateSecretRequest) (*hookverifyv1.RotateSecretResponse, error) {
	e, err := s.loadEndpoint(ctx, req.GetEndpointId())
	if err != nil {
		return nil, err
	}
	overlap := req.GetOverlap().AsDuration()
	if req.GetOverlap() != nil && (!req.GetOverlap().IsValid() || overlap < 0) {
		return nil, status.Error(codes.InvalidArgument, "overlap must be a non-negative duration")
	}
	sec, err := s.sealSecret(e, req.GetSecret())
	if err != nil {
		return nil, err
	}
	expireAt := sec.CreatedAt.Add(overlap)
	auditCtx, err := s.audited(ctx, "secret.rotate", e.ID, sec.ID, describeSecret(sec)+
		fmt.Sprintf("; overlap %s: the secrets valid before end at %s", overlap, expireAt.Format(time.RFC3339Nano)))
	if err != nil {
		return nil, err
	}
	st, _ := s.storage()
	var refused error
	changed, err := st.RotateSecret(auditCtx, sec, expireAt, s.secretReadsUnder(req.GetSecret(), &refused))
	switch {
	case refused != nil:
		return nil, refused
	case err != nil:
		return nil, s.storageStatus(ctx, "rotate secret", err)
	}
	s.cache.invalidate(e.ID)
	s.endpointRows.invalidate(e.ID)
	s.log.InfoContext(ctx, "secret rotated", "endpoint", e.ID, "secret_id", sec.ID, "overlap", overlap, "previous", len(changed))
	resp := &hookverifyv1.RotateSecretResponse{Secret: s.secretInfo(sec)}
	for _, c := range changed {
		resp.Previous = append(resp.Previous, s.secretInfo(c))
	}
	return resp, nil
}

// RetireSecret stops a secret now.
func (s *Server) RetireSecret(ctx context.Context, req *hookverifyv1.RetireSecretRequest) (*hookverifyv1.RetireSecretResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	if req.GetEndpointId() == "" || req.GetSecretId() == "" {
		return nil, status.Error(codes.InvalidArgument, "endpoint_id and secret_id are required")
	}
	auditCtx, err := s.audited(ctx, "secret.retire", req.GetEndpointId(), req.GetSecretId(), "")
	if err != nil {
		return nil, err
	}
	sec, err := st.RetireSecret(auditCtx, req.GetEndpointId(), req.GetSecretId(), s.clock())
	if errors.Is(err, storage.ErrNotFound) {
		// The id is not repeated: what gets pasted as a secret id by mistake is often the
		// secret itself, the one string the provider's dashboard shows.
		return nil, status.Errorf(codes.NotFound, "endpoint %q has no secret with that id (secret list shows the ids, sec_...)", req.GetEndpointId())
	}
	if err != nil {
		return nil, s.storageStatus(ctx, "retire secret", err)
	}
	s.cache.invalidate(sec.EndpointID)
	s.log.InfoContext(ctx, "secret retired", "endpoint", sec.EndpointID, "secret_id", sec.ID)
	return &hookverifyv1.RetireSecretResponse{Secret: s.secretInfo(sec)}, nil
}

// ListSecrets lists an endpoint's secrets, metadata only.
func (s *Server) ListSecrets(ctx context.Context, req *hookverifyv1.ListSecretsRequest) (*hookverifyv1.ListSecretsResponse, error) {
	if _, err := s.loadEndpoint(ctx, req.GetEndpointId()); err != nil {
		return nil, err
	}
	st, _ := s.storage()
	list, err := st.ListSecrets(ctx, req.GetEndpointId())
	if err != nil {
		return nil, s.storageStatus(ctx, "list secrets", err)
	}
	resp := &hookverifyv1.ListSecretsResponse{}
	for _, sec := range list {
		resp.Secrets = append(resp.Secrets, s.secretInfo(sec))
	}
	return resp, nil
}

// ListProviders describes every registered protocol.
func (s *Server) ListProviders(context.Context, *hookverifyv1.ListProvidersRequest) (*hookverifyv1.ListProvidersResponse, error) {
	resp := &hookverifyv1.ListProvidersResponse{}
	for _, p := range s.protocols.All() {
		info := &hookverifyv1.ProviderInfo{
			Name:            p.Name,
			DisplayName:     p.DisplayName,
			SignatureScheme: p.SignatureScheme,
			SignsTimestamp:  p.SignsTimestamp,
			IdentitySource:  p.IdentitySource,
			NeedsUrl:        p.NeedsURL,
			DocsUrl:         p.DocsURL,
			Retries:         p.Retries,
		}
		if p.SignsTimestamp {
			info.DefaultTolerance = durationpb.New(defaultTolerance(p))
		}
		resp.Providers = append(resp.Providers, info)
	}
	return resp, nil
}

// loadEndpoint fetches an endpoint, mapping absence to NOT_FOUND.
func (s *Server) loadEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	st, err := s.storage()
	if err != nil {
		return storage.Endpoint{}, err
	}
	if id == "" {
		return storage.Endpoint{}, status.Error(codes.InvalidArgument, "endpoint id is required")
	}
	e, err := st.GetEndpoint(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Endpoint{}, status.Errorf(codes.NotFound, "endpoint %q not found", id)
	}
	if err != nil {
		return storage.Endpoint{}, s.storageStatus(ctx, "get endpoint", err)
	}
	return e, nil
}

// sealSecret checks a secret against the endpoint's protocol and seals it under a new id.
// Errors never repeat the secret.
func (s *Server) sealSecret(e storage.Endpoint, secret string) (storage.Secret, error) {
	if secret == "" {
		return storage.Secret{}, status.Error(codes.InvalidArgument, "secret is required")
	}
	if len(secret) > maxSecretBytes {
		return storage.Secret{}, status.Errorf(codes.InvalidArgument, "secret is longer than %d bytes", maxSecretBytes)
	}
	prov, ok := s.protocols.Lookup(e.Provider)
	if !ok {
		return storage.Secret{}, status.Errorf(codes.FailedPrecondition, "provider %q is not supported by this server", e.Provider)
	}
	if _, err := prov.ParseSecret(secret); err != nil {
		return storage.Secret{}, status.Errorf(codes.InvalidArgument, "secret is not valid for provider %s: %v", e.Provider, err)
	}
	id, err := newSecretID()
	if err != nil {
		return storage.Secret{}, status.Error(codes.Internal, "cannot generate a secret id")
	}
	keyID, sealed, err := s.keyring.Seal(e.ID, id, []byte(secret))
	if err != nil {
		return storage.Secret{}, status.Error(codes.Internal, "cannot seal the secret")
	}
	return storage.Secret{ID: id, EndpointID: e.ID, KeyID: keyID, Sealed: sealed, CreatedAt: s.clock(),
		Fingerprint: secretbox.Fingerprint(e.ID, []byte(secret))}, nil
}

// secretReadsUnder is the check AddSecret and RotateSecret give the store: under the options
// of the endpoint as stored when the secret is (generic-hmac's key: hex, base64, whsec), the
// secret must read as a key, or it would never match a signature. Run in the store's
// transaction rather than on an earlier read, an endpoint update at the same time cannot
// change the options between the check and the write (see UpdateEndpoint's own check). The
// last run's refusal is kept in refused, to be answered as it is, not as a storage failure.
func (s *Server) secretReadsUnder(secret string, refused *error) storage.SecretCheck {
	return func(e storage.Endpoint) error {
		*refused = nil
		if prov, ok := s.protocols.Lookup(e.Provider); ok && prov.CheckSecret != nil {
			if _, err := prov.CheckSecret(secret, e.Options); err != nil {
				*refused = status.Errorf(codes.InvalidArgument, "secret is not valid for endpoint %q: %v", e.ID, err)
			}
		}
		return *refused
	}
}

func newSecretID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "sec_" + hex.EncodeToString(b[:]), nil
}

// endpointFromProto validates an endpoint and fills its defaults.
func (s *Server) endpointFromProto(in *hookverifyv1.Endpoint) (storage.Endpoint, error) {
	if in == nil {
		return storage.Endpoint{}, status.Error(codes.InvalidArgument, "endpoint is required")
	}
	if !validID(in.GetId()) {
		return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "endpoint id must be 1-%d characters of A-Z a-z 0-9 . _ -", maxIDLength)
	}
	prov, ok := s.protocols.Lookup(in.GetProvider())
	if !ok {
		return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "unknown provider %q; ListProviders shows the supported ones", in.GetProvider())
	}
	e := storage.Endpoint{
		ID:           in.GetId(),
		Provider:     prov.Name,
		MaxBodyBytes: in.GetMaxBodyBytes(),
		DedupeScope:  in.GetDedupeScope(),
		Disabled:     in.GetDisabled(),
		Options:      in.GetOptions(),
	}
	if e.Options == nil {
		e.Options = map[string]string{}
	}
	size := 0
	for k, v := range e.Options {
		size += len(k) + len(v)
	}
	if size > maxOptionsBytes {
		return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "options take %d bytes, more than the %d an endpoint may hold", size, maxOptionsBytes)
	}
	if tol := in.GetTimestampTolerance(); tol != nil {
		if !tol.IsValid() || tol.AsDuration() < 0 || tol.AsDuration() > MaxTolerance {
			return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "timestamp_tolerance must be between 0 and %s", MaxTolerance)
		}
		// The stores keep whole milliseconds: a fraction is rounded up here, so that the
		// answer is the endpoint as stored, and a tolerance given never becomes a shorter
		// one, nor zero (a positive tolerance under 1 ms was stored as 0 s).
		e.TimestampTolerance = ceilMilli(tol.AsDuration())
	}
	if e.TimestampTolerance == 0 {
		e.TimestampTolerance = defaultTolerance(prov)
	}
	switch {
	case e.MaxBodyBytes < 0 || e.MaxBodyBytes > MaxBodyCeiling:
		return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "max_body_bytes must be between 0 and %d", MaxBodyCeiling)
	case e.MaxBodyBytes == 0:
		e.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if e.DedupeScope == "" {
		e.DedupeScope = e.ID
	} else if !validID(e.DedupeScope) {
		return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "dedupe_scope must be 1-%d characters of A-Z a-z 0-9 . _ -", maxIDLength)
	}
	if err := validateOptions(prov, e.Options); err != nil {
		return storage.Endpoint{}, err
	}
	if v, ok := e.Options[protocol.HandshakeSecretUntilOption]; ok {
		// Parsed by the protocol's ValidateOptions. Anyone who knows the URL can hand over a
		// secret while the window is open, so a mistyped year must not leave it open.
		if until, err := time.Parse(time.RFC3339, v); err == nil && until.After(s.clock().Add(maxHandshakeSecretWindow)) {
			return storage.Endpoint{}, status.Errorf(codes.InvalidArgument, "option %s: %s is more than %s ahead of the server's clock: give the few minutes in which the webhook is created",
				protocol.HandshakeSecretUntilOption, v, maxHandshakeSecretWindow)
		}
	}
	// From here on the endpoint holds credential options only as digests, so neither the
	// database, the audit trail nor the response ever sees them as given.
	e.Options = prov.DigestCredentialOptions(e.Options)
	return e, nil
}

// validateOptions checks the server-level options (public_url) and hands the rest to the
// protocol's own validation.
func validateOptions(p *protocol.Protocol, options map[string]string) error {
	own := make(map[string]string, len(options))
	for k, v := range options {
		// NUL is refused whatever the protocol takes: PostgreSQL's JSONB, where options are
		// stored, cannot hold it, and both stores must agree (and say which option is wrong,
		// not the store's bare "invalid argument"). The value is not quoted: it may be a
		// credential.
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return status.Errorf(codes.InvalidArgument, "option %q must not contain NUL", k)
		}
		if k != PublicURLOption {
			own[k] = v
			continue
		}
		if !p.NeedsURL {
			return status.Errorf(codes.InvalidArgument, "option %s: provider %s does not sign the URL", PublicURLOption, p.Name)
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return status.Errorf(codes.InvalidArgument, "option %s must be an absolute http(s) URL", PublicURLOption)
		}
		// A provider that sends its credential itself and needs the URL carries it in the
		// query (Mailchimp's ?secret=). A public_url query replaces the forwarded one
		// (signedURL), so the credential would come from this setting on every delivery,
		// authenticating any request, and sit in plain text in the endpoint and the audit
		// trail. The query must come from each delivery: public_url names the rest.
		if p.StaticCredential && (u.RawQuery != "" || u.ForceQuery) {
			return status.Errorf(codes.InvalidArgument, "option %s must not have a query for provider %s: its credential travels in the query, which must come from each delivery",
				PublicURLOption, p.Name)
		}
	}
	if p.ValidateOptions == nil {
		for k := range own {
			return status.Errorf(codes.InvalidArgument, "provider %s takes no options (got %q)", p.Name, k)
		}
		return nil
	}
	if err := p.ValidateOptions(own); err != nil {
		return status.Errorf(codes.InvalidArgument, "invalid options for provider %s: %v", p.Name, err)
	}
	// Both edges leave hop-by-hop headers out of what they forward (internal/hopbyhop), so an
	// endpoint told to read one would reject every delivery for a header it never gets.
	for _, named := range protocol.HeadersNamed(own) {
		if hopbyhop.Is(named.Header) {
			return status.Errorf(codes.InvalidArgument, "invalid options for provider %s: option %s names %s, a hop-by-hop header, which edges do not forward: no delivery would carry it", p.Name, named.Option, named.Header)
		}
	}
	return nil
}

// ceilMilli returns d rounded up to a whole millisecond, the precision the stores keep an
// endpoint's tolerance in.
func ceilMilli(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r > 0 {
		return d - r + time.Millisecond
	}
	return d
}

// defaultTolerance is the tolerance an endpoint of protocol p gets when it sets none. It is
// stored even for protocols that sign no timestamp, so switching is never surprising.
func defaultTolerance(p *protocol.Protocol) time.Duration {
	if p.DefaultTolerance > 0 {
		return p.DefaultTolerance
	}
	return DefaultTolerance
}

// appliedTolerance is how far from the server's clock, either way, the signed timestamp of a
// delivery to e may be and still verify, and where that tolerance is set; ok is false when e's
// protocol checks no timestamp (for generic-hmac, when its template signs none).
func (s *Server) appliedTolerance(e storage.Endpoint) (tol time.Duration, from string, ok bool) {
	prov, found := s.protocols.Lookup(e.Provider)
	if !found {
		return 0, "", false
	}
	tol, from, ok = e.TimestampTolerance, "timestamp_tolerance", prov.SignsTimestamp
	if tol <= 0 {
		tol = defaultTolerance(prov)
	}
	if prov.OptionTolerance != nil {
		var optTol time.Duration
		if optTol, ok = prov.OptionTolerance(e.Options); optTol > 0 {
			tol, from = optTol, "option tolerance"
		}
	}
	return tol, from, ok
}

// warnToleranceOverWindow logs e, and reports true, when a delivery to it verifies for longer
// than its claim is kept: a signed timestamp verifies from up to the tolerance ahead of the
// clock to up to the tolerance behind it, so for up to twice the tolerance, and a replay that
// arrives after the sweeper deleted its claim is ACCEPTED again. Nothing is refused: the
// operator chooses. Options are not logged (some are credentials).
func (s *Server) warnToleranceOverWindow(ctx context.Context, e storage.Endpoint) bool {
	tol, from, ok := s.appliedTolerance(e)
	if !ok || 2*tol <= s.dedupeWindow {
		return false
	}
	s.log.WarnContext(ctx, "an endpoint's timestamp tolerance is more than half the dedupe window: its deliveries verify for up to twice the tolerance, and a replay that arrives after its claim is deleted is ACCEPTED again; lengthen --dedupe-window or shorten the tolerance",
		"endpoint", e.ID, "provider", e.Provider, "tolerance", tol.String(), "tolerance_from", from, "dedupe_window", s.dedupeWindow.String())
	return true
}

// WarnTolerancesOverDedupeWindow logs the endpoints of st whose deliveries verify for longer
// than this server keeps claims (see warnToleranceOverWindow), one line each, and returns how
// many, for a start to say what an operator would otherwise learn only from a replay
// accepted twice.
func (s *Server) WarnTolerancesOverDedupeWindow(ctx context.Context, st storage.Store) (int, error) {
	endpoints, err := st.ListEndpoints(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range endpoints {
		if s.warnToleranceOverWindow(ctx, e) {
			n++
		}
	}
	return n, nil
}

// endpointToProto is the endpoint as callers see it, credential options as digests only.
func (s *Server) endpointToProto(e storage.Endpoint) *hookverifyv1.Endpoint {
	e = s.withCredentialDigests(e)
	return &hookverifyv1.Endpoint{
		Id:                 e.ID,
		Provider:           e.Provider,
		TimestampTolerance: durationpb.New(e.TimestampTolerance),
		MaxBodyBytes:       e.MaxBodyBytes,
		DedupeScope:        e.DedupeScope,
		Disabled:           e.Disabled,
		Options:            e.Options,
		CreateTime:         timestamppb.New(e.CreatedAt),
		UpdateTime:         timestamppb.New(e.UpdatedAt),
	}
}

// secretInfo describes a secret without its material, with its state as of now.
func (s *Server) secretInfo(sec storage.Secret) *hookverifyv1.SecretInfo {
	info := &hookverifyv1.SecretInfo{
		Id:          sec.ID,
		EndpointId:  sec.EndpointID,
		CreateTime:  timestamppb.New(sec.CreatedAt),
		State:       secretState(sec, s.clock()),
		Fingerprint: s.fingerprint(sec),
		MasterKeyId: sec.KeyID,
	}
	if !sec.NotBefore.IsZero() {
		info.NotBefore = timestamppb.New(sec.NotBefore)
	}
	if !sec.NotAfter.IsZero() {
		info.NotAfter = timestamppb.New(sec.NotAfter)
	}
	if !sec.LastUsedAt.IsZero() {
		info.LastUsedTime = timestamppb.New(sec.LastUsedAt)
	}
	if !sec.RetiredAt.IsZero() {
		info.RetireTime = timestamppb.New(sec.RetiredAt)
	}
	return info
}

func secretState(sec storage.Secret, now time.Time) hookverifyv1.SecretState {
	switch {
	case sec.EndedAt(now):
		return hookverifyv1.SecretState_SECRET_STATE_RETIRED
	case !sec.NotBefore.IsZero() && now.Before(sec.NotBefore):
		return hookverifyv1.SecretState_SECRET_STATE_SCHEDULED
	case !sec.NotAfter.IsZero():
		return hookverifyv1.SecretState_SECRET_STATE_EXPIRING
	}
	return hookverifyv1.SecretState_SECRET_STATE_ACTIVE
}
