package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// InboxStore hands stored deliveries to workers: at-least-once, with leases. A delivery is
// pending (leasable once VisibleAt has passed), leased (by one lease token until LeasedUntil),
// acked (done; removed later by retention) or dead (gave up after MaxAttempts; kept until
// requeued). A lease that expires makes the delivery leasable again; the operation key makes
// the workers' side effects idempotent across such re-deliveries.
//
// Every method is one transaction. Concurrent Lease calls never hand out the same delivery
// while its lease is live (PostgreSQL/CockroachDB: FOR UPDATE SKIP LOCKED plus a conditional
// UPDATE; SQLite: the single writer).
type InboxStore interface {
	// Lease picks up to req.Max leasable deliveries matching req's filter, oldest VisibleAt
	// first, and leases them until req.Time() + req.Visibility under one new lease token, counting
	// an attempt on each. First, in the same transaction, every matching delivery whose lease
	// has expired and which has used req.MaxAttempts attempts moves to dead, its last error
	// becoming "lease expired" followed by the error it held before, if not empty ("lease
	// expired; last error: ...": the worker's nack of an earlier attempt says what failed, and
	// an operator needs it). Returns no error and no deliveries when nothing is leasable. The
	// result also says which leases had expired: an expiry is only noticed by the Lease call
	// that takes the delivery over or dead-letters it (or, for a last attempt, by
	// DeadLetterExhausted with ExpiredLeases). ErrInvalid, leasing nothing, if req.Max or
	// req.MaxAttempts is below 1, req.Visibility is not above zero or req.LeaseToken is empty.
	Lease(ctx context.Context, req LeaseRequest) (LeaseResult, error)
	// Ack marks a leased delivery done. ErrNotFound if the inbox id does not exist;
	// ErrLeaseLost if it is not leased under this token any more (expired and re-leased, or
	// already acked).
	Ack(ctx context.Context, inboxID, leaseToken string, now time.Time) error
	// AckMany acks several leased deliveries, each exactly as Ack would, and returns each
	// one's error in order (nil: acked). The acks are queued together so that they share a
	// commit where concurrent Ack calls would take at least two (see Batcher.SubmitAll).
	AckMany(ctx context.Context, acks []LeaseRef, now time.Time) []error
	// Nack ends a lease early: the delivery becomes leasable again at retryAt, or moves to dead
	// when it has used maxAttempts attempts (dead is then true). lastError is kept as
	// StorableText makes it. Errors as for Ack, and ErrInvalid for a maxAttempts below 1.
	Nack(ctx context.Context, inboxID, leaseToken string, retryAt time.Time, maxAttempts int, lastError string, now time.Time) (dead bool, err error)
	// GiveBack ends a lease early without counting its attempt: the delivery becomes leasable
	// again at retryAt with one attempt fewer used, and never moves to dead, as Nack does once
	// the attempts are spent. It is for work the worker did not do, or cut short, for a reason
	// of its own (it is stopping), which must not spend the delivery's attempts. lastError as
	// for Nack. Errors as for Ack.
	GiveBack(ctx context.Context, inboxID, leaseToken string, retryAt time.Time, lastError string, now time.Time) error
	// ExtendLease moves the end of a live lease, live at req.Time(), to req.Time() +
	// req.Visibility, and returns that end as stored (a store may keep less precision than a
	// time.Time holds). Errors as for Ack (an expired lease cannot be extended: another worker
	// may hold the delivery by now).
	ExtendLease(ctx context.Context, req ExtendRequest) (leasedUntil time.Time, err error)
	// ListDeadLetters returns a page of the dead deliveries matching the filter, in
	// DeadLetterKey order, starting after the key after (from the first when after is zero):
	// up to limit and, when maxBytes is above zero, only as many as fit in it as
	// LeaseRequest.MaxBytes counts (the page's first whatever its size), since the bodies are
	// read into memory and one answer. more reports whether any matching dead delivery follows
	// the page's last, so that a page cut by limit or maxBytes can be continued after the key
	// of its last delivery, and a listing ends without asking for an empty page. ErrInvalid for
	// a limit below 1.
	ListDeadLetters(ctx context.Context, filter InboxFilter, after DeadLetterKey, limit int, maxBytes int64) (list []LeasedDelivery, more bool, err error)
	// Requeue moves a dead delivery back to pending, visible at now, with its attempts reset to
	// zero. ErrNotFound if no dead delivery has the id. The audit event ctx carries
	// (WithAuditEvent) is recorded in the same transaction, with the delivery's endpoint as
	// its EndpointID, only when a delivery changed (see AuditStore).
	Requeue(ctx context.Context, inboxID string, now time.Time) error
	// Discard settles a dead delivery unrun: it becomes acked at now, as an ack would leave it,
	// so that Sweep deletes it and its claim like any acked delivery, and its last error
	// becomes reason followed by the error it held ("REASON; last error: ..."). ErrNotFound if
	// no dead delivery has the id. The audit event ctx carries is recorded as Requeue's is.
	Discard(ctx context.Context, inboxID, reason string, now time.Time) error
	// DeadLetterExhausted moves up to req.Batch pending deliveries that have used
	// req.MaxAttempts attempts or more to dead, at req.Now, and returns how many it moved; call
	// it until the count comes back below Batch. Each one's last error becomes req.Reason,
	// followed by the error it held before, if not empty ("REASON; last error: ..."). Leased
	// deliveries are left alone: Lease and Nack dead-letter them as their leases end.
	//
	// Such deliveries exist only when the limit was lowered since they were nacked: Lease takes
	// deliveries with attempts left, and dead-letters expired leases, never pending ones, so
	// without this they would stay pending for ever, leasable by no one yet counted as work.
	// It reads every pending delivery: it is meant for a server's start, not for each lease.
	//
	// With req.ExpiredLeases it moves, instead, up to req.Batch leased deliveries whose lease
	// ended at or before req.Now and which have used req.MaxAttempts attempts or more, exactly
	// as Lease dead-letters them: each one's last error becomes "lease expired" followed by the
	// error it held before, if not empty ("lease expired; last error: ..."; req.Reason is not
	// used). Lease does so only for the deliveries its filter matches, so an expired last lease
	// of an endpoint no worker leases any more (its workers stopped, or filtered to other
	// endpoints) would otherwise stay leased for ever: not listed as a dead letter, neither
	// requeued nor discarded. It reads only leased deliveries (as many as the workers hold, plus
	// such leases), so it may run often. Pending deliveries are then left alone.
	//
	// ErrInvalid if req.MaxAttempts or req.Batch is below 1.
	DeadLetterExhausted(ctx context.Context, req ExhaustedRequest) (int64, error)
	// DeliveryEndpoints returns the endpoint id of each inbox record among the ids, keyed by
	// inbox id; ids with no record are left out. Authorizing a worker's acks (which name only
	// inbox ids) needs nothing else, and GetDelivery would read the whole body; one read serves
	// all the acks of an AckMany.
	DeliveryEndpoints(ctx context.Context, inboxIDs []string) (map[string]string, error)
	// InboxStats returns per-endpoint counts by state, the oldest pending VisibleAt and the
	// earliest LeasedUntil of the leased deliveries, for endpoints that have any pending,
	// leased or dead delivery, ordered by endpoint id.
	InboxStats(ctx context.Context) ([]EndpointInboxStats, error)
}

// StorableText is the worker's text t (a nack's error) as the inbox keeps it: NUL replaced by
// U+FFFD. PostgreSQL's text cannot hold NUL, the API's strings can, and a worker's error
// often quotes a command's output; refused, the nack would fail and the delivery wait out
// its lease instead of being retried when the worker asked.
func StorableText(t string) string { return strings.ReplaceAll(t, "\x00", "\uFFFD") }

// DeadLetterKey is a dead delivery's place in the order ListDeadLetters lists them in: by
// VisibleAt (when it last became due: its receipt, a nack's retry time or a requeue; neither
// a lease nor its death moves it), then by inbox id, compared byte by byte (not by a
// database's collation), so that every store, and a page token, agree on it. The inbox id
// makes the order total: many deliveries can share a VisibleAt (nacked with one retry time,
// received in one batch), and a key of VisibleAt alone would skip or repeat them across pages.
type DeadLetterKey struct {
	VisibleAt time.Time
	InboxID   string
}

// IsZero reports whether k is the zero key, which lists from the first dead delivery. Inbox
// ids are never empty, so no dead delivery has it.
func (k DeadLetterKey) IsZero() bool { return k.InboxID == "" }

// DeadLetterKeyOf returns the key of d.
func DeadLetterKeyOf(d LeasedDelivery) DeadLetterKey {
	return DeadLetterKey{VisibleAt: d.VisibleAt, InboxID: d.InboxID}
}

// LeaseRef names one leased delivery: what acking, nacking or extending it needs.
type LeaseRef struct {
	InboxID, LeaseToken string
}

// InboxFilter selects deliveries by endpoint ids or dedupe scopes; empty lists select all.
type InboxFilter struct {
	EndpointIDs []string
	Scopes      []string
}

// MaxEndpointPicks is how many endpoints a lease's filter may name and still be picked from
// one endpoint at a time (see ByEndpoint).
const MaxEndpointPicks = 8

// ByEndpoint splits the filter of a lease into one filter per endpoint it names, each with
// the same scopes, so that a backend can pick each endpoint's oldest due deliveries in the
// order of an index on (state, endpoint_id, visible_at, id), as many as the lease takes, and
// merge them. Picked with one filter over several endpoints, or along an index without the
// endpoint, a lease read (and sorted) every due delivery of the endpoints named, or skipped
// every due delivery of the others: tens of milliseconds per lease once tens of thousands
// waited (BENCHMARKS.md). A filter naming no endpoint, or more than MaxEndpointPicks, stays
// whole; repeated endpoints are picked once.
func (f InboxFilter) ByEndpoint() []InboxFilter {
	if len(f.EndpointIDs) == 0 || len(f.EndpointIDs) > MaxEndpointPicks {
		return []InboxFilter{f}
	}
	var split []InboxFilter
	for i, id := range f.EndpointIDs {
		if slices.Contains(f.EndpointIDs[:i], id) {
			continue
		}
		split = append(split, InboxFilter{EndpointIDs: []string{id}, Scopes: f.Scopes})
	}
	return split
}

// LeaseRequest describes one Lease call.
type LeaseRequest struct {
	InboxFilter
	// Max is how many deliveries to lease at most (at least 1).
	Max int
	// Visibility is how long the lease lasts unless extended, acked or nacked.
	Visibility time.Duration
	// MaxAttempts is how many leases a delivery may have before it moves to dead.
	MaxAttempts int
	// MaxBytes, when above zero, bounds what the lease hands out: deliveries are taken, oldest
	// first, while the sizes of their bodies, headers and URLs add up to no more than it; the
	// oldest is taken whatever its size. The answer to a lease is one message, and a caller
	// refuses one over its receive limit after the lease has committed: every delivery of it
	// would stay leased, unrun, an attempt spent, under a token nobody has.
	MaxBytes int64
	// LeaseToken is generated by the caller (random, unguessable).
	LeaseToken string
	// Now is when the lease is taken, for a caller without a clock.
	Now time.Time
	// Clock, when set, is read instead of Now when the lease's transaction runs: a lease waits
	// its turn behind other batches of leases and claims (Batcher; SQLite's one writer, up to
	// its busy timeout; the lease lanes of PostgreSQL), and taken at a time read before that
	// wait it would end early by as long as it waited (a worker asking for 30 s getting 20),
	// and be decided due or expired at a time already past.
	Clock func() time.Time
}

// Time is when the lease is taken: Clock's time, read now, or Now without a clock. A store
// calls it once per run of the lease's statements, when they run, and uses that time for
// all of them.
func (r LeaseRequest) Time() time.Time { return timeFrom(r.Clock, r.Now) }

// timeFrom is the time of a request with an optional clock: the clock's, read now, or now
// without one (LeaseRequest, ExtendRequest).
func timeFrom(clock func() time.Time, now time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return now
}

// ExtendRequest describes one ExtendLease call.
type ExtendRequest struct {
	LeaseRef
	// Visibility is how long the lease lasts from when it is extended.
	Visibility time.Duration
	// Now is when the lease is extended, for a caller without a clock.
	Now time.Time
	// Clock, when set, is read instead of Now when the extension's statement runs, for the
	// reasons of LeaseRequest.Clock (an extension waits its turn too: SQLite's one writer, a
	// connection of the pool, a retried transaction); taken before that wait, it would also
	// find live a lease that had run out meanwhile.
	Clock func() time.Time
}

// Time is when the lease is extended: Clock's time, read now, or Now without a clock. A store
// calls it once per run of the extension's statement, when it runs.
func (r ExtendRequest) Time() time.Time { return timeFrom(r.Clock, r.Now) }

// ExhaustedRequest describes one DeadLetterExhausted call.
type ExhaustedRequest struct {
	// MaxAttempts is the limit in force: deliveries with this many attempts or more have none
	// left.
	MaxAttempts int
	// Reason is the last error the dead deliveries are given, saying why they gave up.
	Reason string
	// ExpiredLeases moves the leased deliveries whose lease has ended with no attempts left,
	// as Lease would, instead of the pending ones (see InboxStore.DeadLetterExhausted).
	ExpiredLeases bool
	// Batch is how many deliveries to move at most (at least 1).
	Batch int
	Now   time.Time
}

// LeaseResult is what one Lease call did.
type LeaseResult struct {
	// Deliveries are the newly leased deliveries, oldest VisibleAt first.
	Deliveries []LeasedDelivery
	// ExpiredToDead counts deliveries this call moved to dead because their last lease expired
	// with no attempts left.
	ExpiredToDead int64
}

// Inbox states.
const (
	StatePending = "pending"
	StateLeased  = "leased"
	StateAcked   = "acked"
	StateDead    = "dead"
)

// LeasedDelivery is an inbox record with its delivery state.
type LeasedDelivery struct {
	Delivery
	State       string
	Attempts    int
	LeaseToken  string
	LeasedUntil time.Time
	VisibleAt   time.Time
	LastError   string
	// PreviousLeaseExpired is set by Lease on a delivery that was still leased by another
	// worker whose lease had expired (the worker crashed, hung or overran its visibility
	// timeout without extending it).
	PreviousLeaseExpired bool
}

// MissedLease is the error of a call on a delivery's lease (Ack, Nack, ExtendLease, GiveBack)
// that matched no live lease, given the delivery's state ("" when it does not exist).
func MissedLease(inboxID, state string) error {
	switch state {
	case "":
		return fmt.Errorf("inbox record %q: %w", inboxID, ErrNotFound)
	case StateAcked:
		return fmt.Errorf("inbox record %q: %w", inboxID, ErrAlreadyAcked)
	}
	return fmt.Errorf("inbox record %q: %w", inboxID, ErrLeaseLost)
}

// EndpointInboxStats summarises one endpoint's inbox.
type EndpointInboxStats struct {
	EndpointID string
	Pending    int64
	Leased     int64
	Dead       int64
	// OldestPendingAt is the VisibleAt of the oldest pending delivery (zero if none).
	OldestPendingAt time.Time
	// EarliestLeaseEnd is the earliest LeasedUntil among the leased deliveries (zero if none).
	// A lease that has run out leaves its delivery leased, and counted in Leased, until a
	// next Lease takes it over (or, on its last attempt, Lease or DeadLetterExhausted with
	// ExpiredLeases moves it to dead); the delivery has waited for a worker since then, which
	// only this shows when no worker is left to lease it.
	EarliestLeaseEnd time.Time
}

// RetentionStore removes what is no longer needed, in bounded batches so no statement holds
// locks for long (no DELETE ... LIMIT, which CockroachDB and PostgreSQL do not share: a
// subquery with LIMIT picks each batch).
type RetentionStore interface {
	// Sweep deletes up to req.Batch acked inbox records acked before req.AckedBefore, and up to
	// req.Batch claims first received before req.ClaimsBefore whose inbox record is acked or
	// gone (a claim whose delivery is still pending, leased or dead is kept, so its work is
	// never repeated). Call it until both counts come back below Batch. ErrInvalid, deleting
	// nothing, for a req.Batch below 1.
	Sweep(ctx context.Context, req SweepRequest) (SweepResult, error)
}

// SweepRequest bounds one Sweep call.
type SweepRequest struct {
	// AckedBefore: acked records acked before it go. Sweep also asks that the record was
	// due (its VisibleAt) before it, which lets it read a range of the inbox's (state,
	// visible_at, id) index rather than every acked record kept: a delivery is due before it
	// is leased and acked, so the bound changes nothing unless the clock that leased it was
	// ahead of the one that acked it, and then the record goes that much later.
	AckedBefore time.Time
	// ClaimsBefore: claims first received before it go, once their delivery is acked or gone.
	ClaimsBefore time.Time
	// ClaimsFrom, when not zero, limits the sweep to claims first received at or after it. A
	// claim past the window whose delivery is not acked (a dead letter, a long backlog) is
	// kept, and read again by every sweep that reaches back to it, under SQLite's one write
	// lock: 200,000 dead letters past the window took 3–5 s a sweep. So a server passes the
	// ClaimsBefore of its last complete sweep here, and reaches back to the start only now
	// and then, for kept claims whose deliveries were acked since.
	ClaimsFrom time.Time
	// Batch is the most rows each of the two deletes takes (at least 1).
	Batch int
}

// SweepResult counts what one Sweep call deleted.
type SweepResult struct {
	InboxDeleted  int64
	ClaimsDeleted int64
}

// WithoutUnreadableLeases runs commit, the stores' transaction of a batch of leases, until it
// commits. commit runs, in order, the leases whose errs entry is nil, stops at the first that
// fails, and returns its index (-1 when the failure was no lease's own) with the error. When
// that lease met a record it cannot read back (ErrUnreadable), it alone fails with the error
// and commit runs again without it, so that one bad record fails only the leases that pick
// it, not whichever leases share its batch; any other error fails the batch.
func WithoutUnreadableLeases(errs []error, commit func() (failed int, err error)) error {
	for {
		failed, err := commit()
		if err == nil || failed < 0 || !errors.Is(err, ErrUnreadable) {
			return err
		}
		errs[failed] = err
	}
}
