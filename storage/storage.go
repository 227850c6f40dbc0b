// Package storage defines what hookverify needs from a database: endpoints, encrypted secrets,
// the transactional claim of an event identity together with its inbox record, and callers'
// hashed API tokens.
//
// Backends (storage/sqlite, storage/crdb) implement Store and must pass the conformance suite in
// storage/storagetest. Every method is safe for concurrent use. Errors are the sentinels of
// errors.go, wrapped with context; callers compare with errors.Is. A call whose ctx is done
// before it commits returns ErrUnavailable (it may be retried), and an administrative write
// whose audit event (WithAuditEvent) has no ID or Action returns ErrInvalid, writing nothing.
package storage

import (
	"context"
	"fmt"
	"time"
)

// Store is the whole storage contract. Consumers should declare the narrower interface they use.
type Store interface {
	EndpointStore
	SecretStore
	ClaimStore
	InboxStore
	RetentionStore
	AuditStore
	TokenStore

	// Migrate applies every pending schema migration. It is idempotent and safe to run from
	// several processes at once.
	Migrate(ctx context.Context) error
	// Ping reports whether the database answers. It returns ErrUnavailable (wrapped) when not.
	Ping(ctx context.Context) error
	// Close releases the store. Every later call returns ErrClosed.
	Close() error
}

// EndpointStore keeps endpoint settings.
type EndpointStore interface {
	// CreateEndpoint stores a new endpoint. It returns ErrAlreadyExists if the id is taken and
	// ErrInvalid if the id or the dedupe scope is empty. CreatedAt and UpdatedAt are taken from
	// the argument.
	CreateEndpoint(ctx context.Context, e Endpoint) error
	// GetEndpoint returns the endpoint with the id, or ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	// ListEndpoints returns every endpoint ordered by id.
	ListEndpoints(ctx context.Context) ([]Endpoint, error)
	// ListEndpointsPage returns up to limit endpoints ordered by id, those whose id follows
	// after (from the first when after is empty), so that a listing of more endpoints than
	// one answer holds can go on from the last id of a page. Ids are compared byte by byte
	// (not by a database's collation), in the order and the comparison alike, so that every
	// store, and a page token, agree on it. ErrInvalid for a limit below 1.
	ListEndpointsPage(ctx context.Context, after string, limit int) ([]Endpoint, error)
	// UpdateEndpoint replaces every field but ID, Provider and CreatedAt of the stored endpoint
	// with e's. It returns ErrNotFound if no endpoint has e.ID, and ErrInvalid, writing nothing,
	// if e's id or dedupe scope is empty. It is a blind write: whatever changed since the
	// caller read the endpoint is overwritten, and an audit detail the caller
	// computed from its read may not describe the change. A change made from the stored
	// settings uses ModifyEndpoint. UpdatedAt is stored as e's, or as a microsecond after the
	// stored one if e's is not later: every update moves it forward, so that a caller's
	// compare-and-set on it (the API's update_time) sees every change, even two within one
	// microsecond of the clock or made after the clock was set back.
	UpdateEndpoint(ctx context.Context, e Endpoint) error
	// ModifyEndpoint reads the endpoint with the id and its secrets (every one, as ListSecrets
	// gives them) and, in the same transaction, stores what change makes of the endpoint: every
	// field but ID, Provider and CreatedAt, which keep their stored values. A secret added or
	// rotated at the same time is either among those change sees or checked, by the SecretCheck
	// of AddSecret or RotateSecret, against the endpoint as this change stores it. The audit event ctx carries, if any, is recorded in that transaction with the
	// detail change returns. So no other write to the endpoint falls between the read and the
	// write, and the detail describes the change from what was really stored. UpdatedAt moves
	// forward as in UpdateEndpoint. change may run
	// more than once (a backend retries conflicts) and must only compute. It returns the
	// endpoint as stored, as GetEndpoint would; ErrNotFound, without calling change, if no
	// endpoint has the id; change's error itself, unwrapped, if change fails, having
	// written nothing; and ErrInvalid, writing nothing, if change empties the dedupe scope.
	ModifyEndpoint(ctx context.Context, id string, change EndpointChange) (Endpoint, error)
}

// EndpointChange computes an endpoint's new settings from its stored ones and its secrets as
// stored, and the detail of the audit event that records the change (see ModifyEndpoint).
type EndpointChange func(current Endpoint, secrets []Secret) (next Endpoint, auditDetail string, err error)

// Apply runs c for a backend's ModifyEndpoint: it returns the endpoint to store, with ID,
// Provider and CreatedAt kept from current, and ctx with the audit event it carries, if any,
// given c's detail.
func (c EndpointChange) Apply(ctx context.Context, current Endpoint, secrets []Secret) (context.Context, Endpoint, error) {
	next, detail, err := c(current, secrets)
	if err != nil {
		return ctx, Endpoint{}, err
	}
	next.ID, next.Provider, next.CreatedAt = current.ID, current.Provider, current.CreatedAt
	if ev, ok := AuditEventFrom(ctx); ok {
		ev.Detail = detail
		ctx = WithAuditEvent(ctx, ev)
	}
	return ctx, next, nil
}

// SecretCheck judges a secret about to be stored against its endpoint as stored in the same
// transaction (see AddSecret).
type SecretCheck func(endpoint Endpoint) error

// On runs c on e for a backend's AddSecret or RotateSecret: its refusal, or nil when c takes
// the secret or is nil (no check).
func (c SecretCheck) On(e Endpoint) error {
	if c == nil {
		return nil
	}
	return c(e)
}

// SecretStore keeps signing secrets, sealed: the store never sees plaintext material.
type SecretStore interface {
	// AddSecret stores a new secret, if check (when not nil) takes it: check runs on the
	// endpoint as read in the transaction that stores the secret, so that an endpoint update
	// at the same time cannot fall between the check and the write (see ModifyEndpoint). It
	// may run more than once and must only compute; its error is returned itself, unwrapped,
	// with nothing written. AddSecret returns ErrNotFound if the endpoint does not exist,
	// ErrAlreadyExists if the secret id is taken and ErrInvalid if it is empty.
	AddSecret(ctx context.Context, s Secret, check SecretCheck) error
	// RotateSecret stores s and, in the same transaction, sets NotAfter to expireAt on every
	// other secret of s.EndpointID that was in force when s was created: not retired, NotBefore
	// unset or not after s.CreatedAt (a secret scheduled for later is left alone), and NotAfter
	// unset or later than expireAt. It returns the secrets it changed, as they are after the
	// change, oldest first. ErrNotFound if the endpoint does not exist; ErrInvalid for an empty
	// secret id, or for a zero expireAt, which would read back as "no end" and so extend the
	// secrets instead. check is as in AddSecret: a refusal writes nothing, and ends no secret.
	RotateSecret(ctx context.Context, s Secret, expireAt time.Time, check SecretCheck) ([]Secret, error)
	// RetireSecret marks the secret retired, recording the given time, if it is not retired
	// already, and returns it as stored. A retired secret has ended (Secret.EndedAt) from then
	// on, whatever the clock says. ErrNotFound if no such secret belongs to the endpoint;
	// ErrInvalid for a zero time, which would read back as "not retired".
	RetireSecret(ctx context.Context, endpointID, secretID string, at time.Time) (Secret, error)
	// ListSecrets returns every secret of the endpoint, retired ones included, ordered by
	// CreatedAt then ID. An unknown endpoint yields an empty list.
	ListSecrets(ctx context.Context, endpointID string) ([]Secret, error)
	// MarkSecretsUsed moves each secret's LastUsedAt forward to the use's time (never back).
	// Unknown secrets are ignored. Callers batch uses: this is written about once a minute per
	// secret, not per delivery.
	MarkSecretsUsed(ctx context.Context, uses []SecretUse) error
	// ResealSecret replaces the sealed material and key id of a secret, if it is still sealed
	// under fromKeyID, and reports whether it did (false: resealed meanwhile by someone else).
	// ErrNotFound if no such secret belongs to the endpoint. Used by master-key rotation.
	ResealSecret(ctx context.Context, endpointID, secretID, fromKeyID, toKeyID string, sealed []byte) (bool, error)
}

// SecretUse says a secret authenticated a delivery at At.
type SecretUse struct {
	EndpointID string
	SecretID   string
	At         time.Time
}

// ClaimStore records accepted deliveries.
type ClaimStore interface {
	// Claim atomically claims (d.Scope, d.EventID) and stores d as its inbox record, in one
	// transaction committed before it returns. If the identity was claimed before, nothing is
	// written and the result describes the first claim (Accepted false). If the outcome of a
	// commit is ambiguous the backend retries with the same d.InboxID and reports a claim held
	// by d.InboxID as Accepted. Any failure to commit returns an error wrapping ErrUnavailable;
	// it never reports Accepted without a commit. ErrInvalid if a required field is empty.
	Claim(ctx context.Context, d Delivery) (ClaimResult, error)
	// LookupClaim returns the claim of (scope, eventID) as Claim would report it to a
	// duplicate (Accepted false), or ErrNotFound. It writes nothing: the server uses it to keep
	// answering DUPLICATE while backpressure refuses new events.
	LookupClaim(ctx context.Context, scope, eventID string) (ClaimResult, error)
	// GetDelivery returns the inbox record with the id, or ErrNotFound.
	GetDelivery(ctx context.Context, inboxID string) (Delivery, error)
	// CountDeliveries returns how many inbox records exist for the scope (all scopes if empty).
	CountDeliveries(ctx context.Context, scope string) (int64, error)
}

// Endpoint is one place a provider delivers to.
type Endpoint struct {
	ID                 string
	Provider           string
	TimestampTolerance time.Duration
	MaxBodyBytes       int64
	// DedupeScope is never empty once stored: callers fill it with ID by default.
	DedupeScope string
	Disabled    bool
	Options     map[string]string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Check returns an error wrapping ErrInvalid for an endpoint no store keeps: one without an
// id, or without a dedupe scope (a claim needs one, so every delivery to it would be refused).
// Both backends call it before writing, where their schemas do not refuse it alike.
func (e Endpoint) Check() error {
	switch {
	case e.ID == "":
		return fmt.Errorf("%w: empty endpoint id", ErrInvalid)
	case e.DedupeScope == "":
		return fmt.Errorf("%w: empty dedupe scope", ErrInvalid)
	}
	return nil
}

// Secret is a signing secret with its material sealed by the caller (see server/secretbox).
type Secret struct {
	ID         string
	EndpointID string
	// KeyID names the master key Sealed was encrypted under.
	KeyID string
	// Sealed is the encrypted material; the store treats it as opaque bytes.
	Sealed    []byte
	CreatedAt time.Time
	// Zero NotBefore means no start restriction; zero NotAfter means no end.
	NotBefore time.Time
	NotAfter  time.Time
	// Zero RetiredAt means not retired.
	RetiredAt  time.Time
	LastUsedAt time.Time
	// Fingerprint identifies the material without revealing it (see secretbox.Fingerprint);
	// empty for secrets stored before fingerprints existed.
	Fingerprint string
}

// ValidAt reports whether the secret authenticates deliveries at t.
func (s Secret) ValidAt(t time.Time) bool {
	return !s.EndedAt(t) && (s.NotBefore.IsZero() || !t.Before(s.NotBefore))
}

// EndedAt reports whether the secret will never authenticate from t on: retired, past its
// NotAfter, or with a window that ends before it starts (one scheduled for later has not
// ended). A retirement ends it whatever t is: it is an act ("stop this secret now", a stolen
// one), kept with the time it was done, not a time like NotAfter; compared with the clock, a
// retired secret would authenticate again after the clock stepped back past it (an NTP step,
// a VM restored from a snapshot), and on an instance whose clock is behind.
func (s Secret) EndedAt(t time.Time) bool {
	return !s.RetiredAt.IsZero() || (!s.NotAfter.IsZero() && !t.Before(s.NotAfter)) ||
		(!s.NotAfter.IsZero() && !s.NotBefore.IsZero() && !s.NotAfter.After(s.NotBefore))
}

// Header is one HTTP header line as received.
type Header struct {
	Name  string
	Value string
}

// Delivery is an inbox record: an authenticated delivery, stored byte for byte.
type Delivery struct {
	// InboxID is generated by the caller before the claim so that a retried, ambiguous commit
	// can recognise its own row.
	InboxID      string
	Scope        string
	EventID      string
	EndpointID   string
	OperationKey string
	SecretID     string
	Method       string
	URL          string
	Headers      []Header
	Body         []byte
	ReceivedAt   time.Time
}

// ClaimResult is the outcome of Claim.
type ClaimResult struct {
	// Accepted is true when this call made the claim (and stored its delivery).
	Accepted bool
	// InboxID, OperationKey and FirstReceivedAt describe the winning claim.
	InboxID         string
	OperationKey    string
	FirstReceivedAt time.Time
}
