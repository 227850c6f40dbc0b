package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// Inbox limits and defaults.
const (
	DefaultVisibility  = 30 * time.Second
	MaxVisibility      = 12 * time.Hour
	DefaultMaxAttempts = 10
	maxLeaseBatch      = 100
	maxAckBatch        = 100
	defaultDeadLimit   = 100
	maxDeadLimit       = 1000
	maxNackErrorBytes  = 1024
	exhaustedBatch     = 1000
	// maxLeaseBytes bounds the bodies, headers and URLs one lease hands out (the oldest
	// delivery is leased whatever its size; storage.LeaseRequest.MaxBytes): gRPC's clients
	// refuse an answer over 4 MiB unless told otherwise, and a lease whose answer the caller
	// refuses has committed all the same, each of its deliveries leased to nobody. The 512 KiB
	// left are for the rest of the answer: up to 100 deliveries' ids, keys, last errors and
	// the framing of their headers.
	maxLeaseBytes = 4<<20 - 512<<10
)

// inbox returns the store's inbox side, or UNAVAILABLE while there is no store.
func (s *Server) inbox() (storage.InboxStore, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	ib, ok := st.(storage.InboxStore)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this storage backend has no inbox")
	}
	return ib, nil
}

// DeadLetterExhausted moves the deliveries that have no attempts left under this server's
// MaxAttempts to the dead letters, and returns how many it moved: first the leased ones whose
// lease has run out (deadLetterExpiredLeases), then the pending ones. There are pending such
// deliveries only when MaxAttempts was lowered since they were nacked; no lease would ever
// take them, yet they would count as pending for ever (stats, backpressure). Their last error
// says why. Run it once the store is open, before serving; RunRetention runs it again every
// exhaustedCheckInterval. It reads every pending delivery.
func (s *Server) DeadLetterExhausted(ctx context.Context, st storage.InboxStore) (int64, error) {
	moved, err := s.deadLetterExpiredLeases(ctx, st)
	if err != nil {
		return moved, err
	}
	req := storage.ExhaustedRequest{
		MaxAttempts: s.maxAttempts,
		Reason:      fmt.Sprintf("attempts used up: --max-attempts lowered to %d", s.maxAttempts),
		Batch:       exhaustedBatch,
		Now:         s.clock(),
	}
	var lowered int64
	for {
		n, err := st.DeadLetterExhausted(ctx, req)
		lowered += n
		s.metrics.observeExhausted(n)
		if err != nil {
			return moved + lowered, fmt.Errorf("dead-letter deliveries with no attempts left: %w", err)
		}
		if n < int64(req.Batch) {
			break
		}
	}
	if lowered > 0 {
		s.log.WarnContext(ctx, "pending deliveries with no attempts left under --max-attempts moved to the dead letters",
			"deliveries", lowered, "max_attempts", s.maxAttempts)
	}
	return moved + lowered, nil
}

// deadLetterExpiredLeases moves the leased deliveries whose last attempt's lease has run out
// to the dead letters, as a lease would (last error "lease expired; ..."), and returns how
// many it moved. A lease does so only for the endpoints and scopes it asks for: once no
// worker leases an endpoint any more (its workers stopped, or filtered to other endpoints),
// such a delivery stayed leased for ever, never listed as a dead letter, so that an operator
// could neither requeue nor discard it. It reads only the leased deliveries, so RunRetention
// runs it at every sweep.
func (s *Server) deadLetterExpiredLeases(ctx context.Context, st storage.InboxStore) (int64, error) {
	req := storage.ExhaustedRequest{MaxAttempts: s.maxAttempts, ExpiredLeases: true, Batch: exhaustedBatch, Now: s.clock()}
	var moved int64
	for {
		n, err := st.DeadLetterExhausted(ctx, req)
		moved += n
		s.metrics.observeExpiredToDead(n)
		if err != nil {
			return moved, fmt.Errorf("dead-letter expired last leases: %w", err)
		}
		if n < int64(req.Batch) {
			break
		}
	}
	if moved > 0 {
		s.log.WarnContext(ctx, "deliveries whose last attempt's lease ran out, with no lease to take them over, moved to the dead letters",
			"deliveries", moved, "max_attempts", s.maxAttempts)
	}
	return moved, nil
}

// Lease hands out up to max_deliveries deliveries under a new lease token.
func (s *Server) Lease(ctx context.Context, req *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	max := int(req.GetMaxDeliveries())
	switch {
	case max < 0 || max > maxLeaseBatch:
		return nil, status.Errorf(codes.InvalidArgument, "max_deliveries must be between 0 and %d", maxLeaseBatch)
	case max == 0:
		max = 1
	}
	visibility, err := visibilityOf(req.GetVisibilityTimeout())
	if err != nil {
		return nil, err
	}
	token, err := newLeaseToken()
	if err != nil {
		return nil, status.Error(codes.Internal, "cannot generate a lease token")
	}
	result, err := ib.Lease(ctx, storage.LeaseRequest{
		InboxFilter: storage.InboxFilter{EndpointIDs: req.GetEndpointIds(), Scopes: req.GetDedupeScopes()},
		Max:         max,
		Visibility:  visibility,
		MaxAttempts: s.maxAttempts,
		MaxBytes:    maxLeaseBytes,
		LeaseToken:  token,
		Now:         s.clock(),
		// Read by the store when the lease's batch runs: the lease may wait behind others
		// first, and would otherwise be shorter than asked by as long as it waited.
		Clock: s.clock,
	})
	if err != nil {
		return nil, s.storageStatus(ctx, "lease", err)
	}
	s.metrics.observeLease(result)
	s.redactStoredCredentials(ctx, result.Deliveries)
	resp := &hookverifyv1.LeaseResponse{Deliveries: make([]*hookverifyv1.InboxDelivery, len(result.Deliveries))}
	for i, d := range result.Deliveries {
		resp.Deliveries[i] = inboxDeliveryToProto(d)
	}
	if len(resp.Deliveries) == 0 {
		resp.UnknownEndpointIds = s.unknownEndpoints(ctx, req.GetEndpointIds())
	}
	return resp, nil
}

// unknownEndpoints returns the ids that name no endpoint, each once. An empty lease is
// otherwise the same for a mistyped --endpoint as for an empty inbox, and a worker with the
// typo would wait for ever. A lookup that fails counts the id as known: this is only a hint,
// and the lease itself succeeded.
//
// It asks whether the endpoint exists, and no more: the endpoint cache's entry when there is
// one, else the endpoint's row alone. Loaded through the cache, every idle poll of a worker
// read and decrypted all the endpoint's secrets once per cache TTL, on an instance that may
// verify nothing for it, and logged each secret that does not open at the pace of the polls.
// The read is one per id and empty lease, as the lease's own statement reads per endpoint.
func (s *Server) unknownEndpoints(ctx context.Context, ids []string) []string {
	st, err := s.storage()
	if err != nil {
		return nil
	}
	var unknown []string
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if e, ok := s.cache.peek(id); ok {
			if !e.found {
				unknown = append(unknown, id)
			}
			continue
		}
		if _, err := st.GetEndpoint(ctx, id); errors.Is(err, storage.ErrNotFound) {
			unknown = append(unknown, id)
		}
	}
	return unknown
}

// The google.rpc.ErrorInfo of an Ack (or Nack, ExtendLease) refused because the delivery was
// already acked: FAILED_PRECONDITION, as for any lost lease, but the delivery's work is done.
const (
	ErrorDomain         = "hookverify.dev"
	AlreadyAckedReason  = "ALREADY_ACKED"
	AlreadyAckedMessage = "already acked (by an earlier call whose answer was lost, or by another worker after this lease ended)"
)

// AlreadyAcked reports whether err, as a client of the inbox receives it, is a call refused
// because the delivery was already acked (FAILED_PRECONDITION with the ALREADY_ACKED
// ErrorInfo, as leaseStatus answers): the delivery's work is done.
func AlreadyAcked(err error) bool {
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == AlreadyAckedReason && info.GetDomain() == ErrorDomain {
			return true
		}
	}
	return false
}

// Ack marks a leased delivery done.
func (s *Server) Ack(ctx context.Context, req *hookverifyv1.AckRequest) (*hookverifyv1.AckResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	if err := requireLease(req.GetInboxId(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	if err := ib.Ack(ctx, req.GetInboxId(), req.GetLeaseToken(), s.clock()); err != nil {
		return nil, leaseStatus(ctx, s, "ack", err)
	}
	s.metrics.observeAck()
	return &hookverifyv1.AckResponse{}, nil
}

// AckMany marks several leased deliveries done in one commit, each answered on its own. The
// call fails as a whole only for a malformed request (or, before it gets here, a caller it is
// not for); an ack the store could not do is answered UNAVAILABLE in its own result, as Ack
// would have been.
func (s *Server) AckMany(ctx context.Context, req *hookverifyv1.AckManyRequest) (*hookverifyv1.AckManyResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	acks := req.GetAcks()
	if len(acks) == 0 || len(acks) > maxAckBatch {
		return nil, status.Errorf(codes.InvalidArgument, "acks must hold 1 to %d acks, not %d", maxAckBatch, len(acks))
	}
	refs := make([]storage.LeaseRef, len(acks))
	for i, a := range acks {
		if requireLease(a.GetInboxId(), a.GetLeaseToken()) != nil {
			return nil, status.Errorf(codes.InvalidArgument, "acks[%d]: inbox_id and lease_token are required", i)
		}
		refs[i] = storage.LeaseRef{InboxID: a.GetInboxId(), LeaseToken: a.GetLeaseToken()}
	}
	errs := ib.AckMany(ctx, refs, s.clock())
	resp := &hookverifyv1.AckManyResponse{Results: make([]*hookverifyv1.AckResult, len(refs))}
	for i, err := range errs {
		result := &hookverifyv1.AckResult{InboxId: refs[i].InboxID}
		if err != nil {
			st := status.Convert(leaseStatus(ctx, s, "ack", err))
			result.Code, result.Message = int32(st.Code()), st.Message()
			result.AlreadyAcked = errors.Is(err, storage.ErrAlreadyAcked)
		} else {
			s.metrics.observeAck()
		}
		resp.Results[i] = result
	}
	return resp, nil
}

// Nack gives a leased delivery back for a later attempt; with not_attempted, without counting
// the attempt (storage.Inbox.GiveBack).
func (s *Server) Nack(ctx context.Context, req *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	if err := requireLease(req.GetInboxId(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	retryAfter := req.GetRetryAfter().AsDuration()
	if req.GetRetryAfter() != nil && (!req.GetRetryAfter().IsValid() || retryAfter < 0 || retryAfter > MaxVisibility) {
		return nil, status.Errorf(codes.InvalidArgument, "retry_after must be between 0 and %s", MaxVisibility)
	}
	if len(req.GetError()) > maxNackErrorBytes {
		return nil, status.Errorf(codes.InvalidArgument, "error is longer than %d bytes", maxNackErrorBytes)
	}
	now := s.clock()
	if req.GetNotAttempted() {
		if err := ib.GiveBack(ctx, req.GetInboxId(), req.GetLeaseToken(), now.Add(retryAfter), req.GetError(), now); err != nil {
			return nil, leaseStatus(ctx, s, "nack", err)
		}
		s.metrics.observeGiveBack()
		return &hookverifyv1.NackResponse{}, nil
	}
	dead, err := ib.Nack(ctx, req.GetInboxId(), req.GetLeaseToken(), now.Add(retryAfter), s.maxAttempts, req.GetError(), now)
	if err != nil {
		return nil, leaseStatus(ctx, s, "nack", err)
	}
	s.metrics.observeNack(dead)
	return &hookverifyv1.NackResponse{DeadLettered: dead}, nil
}

// ExtendLease keeps a live lease for longer.
func (s *Server) ExtendLease(ctx context.Context, req *hookverifyv1.ExtendLeaseRequest) (*hookverifyv1.ExtendLeaseResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	if err := requireLease(req.GetInboxId(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	visibility, err := visibilityOf(req.GetVisibilityTimeout())
	if err != nil {
		return nil, err
	}
	until, err := ib.ExtendLease(ctx, storage.ExtendRequest{
		LeaseRef:   storage.LeaseRef{InboxID: req.GetInboxId(), LeaseToken: req.GetLeaseToken()},
		Visibility: visibility,
		Now:        s.clock(),
		// Read by the store when the extension runs, as a lease's clock is: the extension may
		// wait for the writer or a connection first, and would otherwise end early by as long
		// as it waited, or extend a lease that had run out meanwhile.
		Clock: s.clock,
	})
	if err != nil {
		return nil, leaseStatus(ctx, s, "extend lease", err)
	}
	// The end the store wrote, which may be less precise than the clock: a worker told a
	// later one would count on a lease it no longer has.
	return &hookverifyv1.ExtendLeaseResponse{LeasedUntil: timestamppb.New(until)}, nil
}

// ListDeadLetters lists deliveries that used all their attempts, a page at a time: the page
// token is the place in the store's order (storage.DeadLetterKey) after which the next page
// starts, so that an operator with more dead letters than one answer holds can see them all
// without requeuing any, and a page cut short by the size budget continues where it stopped.
func (s *Server) ListDeadLetters(ctx context.Context, req *hookverifyv1.ListDeadLettersRequest) (*hookverifyv1.ListDeadLettersResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	switch {
	case limit < 0 || limit > maxDeadLimit:
		return nil, status.Errorf(codes.InvalidArgument, "limit must be between 0 and %d", maxDeadLimit)
	case limit == 0:
		limit = defaultDeadLimit
	}
	filter := storage.InboxFilter{EndpointIDs: req.GetEndpointIds(), Scopes: req.GetDedupeScopes()}
	after, err := parseDeadLetterToken(req.GetPageToken(), filter)
	if err != nil {
		return nil, err
	}
	// Bounded as a lease is: the bodies are read into memory and one answer.
	dead, more, err := ib.ListDeadLetters(ctx, filter, after, limit, maxLeaseBytes)
	if err != nil {
		return nil, s.storageStatus(ctx, "list dead letters", err)
	}
	// The store's budget counts bodies, headers and URLs only, and leaves room for the rest of
	// up to 100 deliveries, as a lease takes; a page holds up to 1,000, whose event ids (512
	// bytes each) and last errors (1 KiB, 3 with NULs made U+FFFD) alone can pass the client's
	// 4 MiB, and the client then refuses every answer of that page. So the page is measured as
	// it is sent and ends before the delivery that would pass the limit (the first is kept
	// whatever its size); the next page starts there.
	s.redactStoredCredentials(ctx, dead)
	list := make([]*hookverifyv1.InboxDelivery, len(dead))
	for i, d := range dead {
		list[i] = inboxDeliveryToProto(d)
	}
	n := fittingItems(list)
	resp := &hookverifyv1.ListDeadLettersResponse{Deliveries: list[:n]}
	if (more || n < len(list)) && n > 0 {
		resp.NextPageToken = deadLetterToken(storage.DeadLetterKeyOf(dead[n-1]), filter)
	}
	return resp, nil
}

// maxPageAnswerBytes bounds the items of one listing's answer (ListDeadLetters,
// ListEndpoints, ListAuditEvents) as encoded, below gRPC's default 4 MiB receive limit by
// room for the page token and the framing.
const maxPageAnswerBytes = 4<<20 - 16<<10

// fittingItems returns how many of a page's items, sent as field 1 of its answer, fit in
// maxPageAnswerBytes: the items up to the one that would pass it, and the first whatever its
// size (a page must list something to move on).
func fittingItems[T proto.Message](items []T) int {
	size := 0
	for i, item := range items {
		size += protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(item))
		if i > 0 && size > maxPageAnswerBytes {
			return i
		}
	}
	return len(items)
}

// deadLetterPages are ListDeadLetters' page tokens: "d1:<filter hash>:<VisibleAt in Unix
// µs>:<inbox id>". Inbox ids are not secret: the page that gave the token listed it.
var deadLetterPages = pageTokens{version: "d1", rpc: "ListDeadLetters", filters: "endpoint_ids or dedupe_scopes"}

// deadLetterToken is the page token of the page after key, for a listing filtered by filter.
func deadLetterToken(key storage.DeadLetterKey, filter storage.InboxFilter) string {
	return deadLetterPages.token(filterHash(filter), timedPlace(key.VisibleAt, key.InboxID))
}

// parseDeadLetterToken returns the key a page token names (the zero key for no token), or
// INVALID_ARGUMENT for one this service did not give, or gave for other filters.
func parseDeadLetterToken(token string, filter storage.InboxFilter) (storage.DeadLetterKey, error) {
	if token == "" {
		return storage.DeadLetterKey{}, nil
	}
	place, err := deadLetterPages.parse(token, filterHash(filter))
	if err != nil {
		return storage.DeadLetterKey{}, err
	}
	at, id, ok := parseTimedPlace(place)
	if !ok {
		return storage.DeadLetterKey{}, deadLetterPages.invalid()
	}
	return storage.DeadLetterKey{VisibleAt: at, InboxID: id}, nil
}

// filterHash identifies a dead-letter listing's filters in its page tokens: the endpoint ids
// and scopes as sets, since their order and repetition do not change what is listed.
func filterHash(f storage.InboxFilter) string { return setsHash(f.EndpointIDs, f.Scopes) }

// pageTokens makes and reads one listing's page tokens (AIP-158): "<version>:<filter
// hash>:<place>", in unpadded base64url so that callers treat them as opaque. The place is
// the last listed item's place in the listing's order, after which the next page starts. The
// hash names the filters of the listing the token came from: with other filters its place
// would skip or repeat items without telling, so a token continues only its own listing.
type pageTokens struct {
	// version starts every token, so that a later format, or another listing's token, can be
	// told from this one.
	version string
	// rpc and filters name the method and its filter fields, for the errors.
	rpc, filters string
}

// maxPageToken bounds a page token's length: an id is at most some dozens of bytes, and a
// longer token is not one this service gave.
const maxPageToken = 1024

// token is the page token of the page after place, for a listing whose filters hash to
// filterHash.
func (p pageTokens) token(filterHash, place string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.version + ":" + filterHash + ":" + place))
}

// invalid is the error for a token this service did not give.
func (p pageTokens) invalid() error {
	return status.Errorf(codes.InvalidArgument, "page_token is not one a %s answer gave", p.rpc)
}

// parse returns the place a non-empty token names, unchecked, or INVALID_ARGUMENT for a token
// this service did not give, or gave for filters that do not hash to filterHash.
func (p pageTokens) parse(token, filterHash string) (string, error) {
	if len(token) > maxPageToken {
		return "", p.invalid()
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", p.invalid()
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != p.version {
		return "", p.invalid()
	}
	if parts[1] != filterHash {
		return "", status.Errorf(codes.InvalidArgument,
			"page_token was given for other %s: pass the same filters as the call that gave it", p.filters)
	}
	return parts[2], nil
}

// Bounds of a page token's time: those of a stored time, and within every store's range.
var (
	minTokenTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTokenTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// timedPlace is the place of an item in a listing ordered by a time, then by id: "<time in
// Unix µs>:<id>", the precision the stores keep.
func timedPlace(at time.Time, id string) string {
	return strconv.FormatInt(at.UnixMicro(), 10) + ":" + id
}

// parseTimedPlace reads a timedPlace; ok is false for one no stored item can have (a time
// outside the stores' range; an id empty, not UTF-8 or holding NUL).
func parseTimedPlace(place string) (at time.Time, id string, ok bool) {
	micros, id, found := strings.Cut(place, ":")
	if !found {
		return time.Time{}, "", false
	}
	if !validPlaceID(id) {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	at = time.UnixMicro(n).UTC()
	if at.Before(minTokenTime) || at.After(maxTokenTime) {
		return time.Time{}, "", false
	}
	return at, id, true
}

// validPlaceID reports whether id may be a stored item's id, as a page token names it.
func validPlaceID(id string) bool {
	return id != "" && utf8.ValidString(id) && strings.IndexByte(id, 0) < 0
}

// setsHash identifies a listing's filters in its page tokens: each list as a set, since the
// order and repetition of its values do not change what is listed.
func setsHash(lists ...[]string) string {
	h := sha256.New()
	for _, list := range lists {
		set := slices.Compact(slices.Sorted(slices.Values(list)))
		// Each value length-prefixed, so that no two filters encode alike.
		h.Write(binary.AppendUvarint(nil, uint64(len(set))))
		for _, v := range set {
			h.Write(binary.AppendUvarint(nil, uint64(len(v))))
			h.Write([]byte(v))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Requeue brings a dead delivery back.
func (s *Server) Requeue(ctx context.Context, req *hookverifyv1.RequeueRequest) (*hookverifyv1.RequeueResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	if req.GetInboxId() == "" {
		return nil, status.Error(codes.InvalidArgument, "inbox_id is required")
	}
	// The audit trail records who brought the work back, with the endpoint the store finds.
	// The id is the caller's text, made storable: PostgreSQL's text cannot hold NUL, and an id
	// with one, which names no delivery, must be NOT_FOUND as in the other inbox calls, not
	// a failure to bind the event that is never written.
	auditCtx, err := s.audited(ctx, "inbox.requeue", "", "", "delivery "+storage.StorableText(req.GetInboxId()))
	if err != nil {
		return nil, err
	}
	if err := ib.Requeue(auditCtx, req.GetInboxId(), s.clock()); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, status.Errorf(codes.NotFound, "no dead delivery %q", req.GetInboxId())
		}
		return nil, s.storageStatus(ctx, "requeue", err)
	}
	s.log.InfoContext(ctx, "dead delivery requeued", "inbox_id", req.GetInboxId(), "actor", PrincipalFrom(ctx).Name)
	return &hookverifyv1.RequeueResponse{}, nil
}

// Discard settles a dead delivery without running it.
func (s *Server) Discard(ctx context.Context, req *hookverifyv1.DiscardRequest) (*hookverifyv1.DiscardResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	switch reason := req.GetReason(); {
	case req.GetInboxId() == "":
		return nil, status.Error(codes.InvalidArgument, "inbox_id is required")
	case strings.TrimSpace(reason) == "":
		// The delivery's work is given up for good: whoever reads the record later (or the log)
		// must learn why.
		return nil, status.Error(codes.InvalidArgument, "reason is required: say why the delivery must not run")
	case len(reason) > maxNackErrorBytes:
		return nil, status.Errorf(codes.InvalidArgument, "reason is longer than %d bytes", maxNackErrorBytes)
	case strings.IndexByte(reason, 0) >= 0:
		return nil, status.Error(codes.InvalidArgument, "reason holds NUL")
	}
	// The work is given up for good, and cannot be brought back: the audit trail records who
	// did it and why, as it does admin changes.
	// The id made storable as in Requeue; the reason holds no NUL.
	auditCtx, err := s.audited(ctx, "inbox.discard", "", "", "delivery "+storage.StorableText(req.GetInboxId())+": "+req.GetReason())
	if err != nil {
		return nil, err
	}
	if err := ib.Discard(auditCtx, req.GetInboxId(), "discarded: "+req.GetReason(), s.clock()); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, status.Errorf(codes.NotFound, "no dead delivery %q", req.GetInboxId())
		}
		return nil, s.storageStatus(ctx, "discard", err)
	}
	s.log.InfoContext(ctx, "dead delivery discarded", "inbox_id", req.GetInboxId(), "reason", req.GetReason(), "actor", PrincipalFrom(ctx).Name)
	return &hookverifyv1.DiscardResponse{}, nil
}

// GetInboxStats reports each endpoint's inbox.
func (s *Server) GetInboxStats(ctx context.Context, _ *hookverifyv1.GetInboxStatsRequest) (*hookverifyv1.GetInboxStatsResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	stats, err := ib.InboxStats(ctx)
	if err != nil {
		return nil, s.storageStatus(ctx, "inbox stats", err)
	}
	now := s.clock()
	resp := &hookverifyv1.GetInboxStatsResponse{}
	for _, st := range stats {
		e := &hookverifyv1.EndpointInboxStats{EndpointId: st.EndpointID, Pending: st.Pending, Leased: st.Leased, Dead: st.Dead}
		if !st.OldestPendingAt.IsZero() {
			e.OldestPendingAge = durationpb.New(max(now.Sub(st.OldestPendingAt), 0))
		}
		if end := st.EarliestLeaseEnd; !end.IsZero() && !end.After(now) {
			e.OldestExpiredLeaseAge = durationpb.New(now.Sub(end))
		}
		resp.Endpoints = append(resp.Endpoints, e)
	}
	return resp, nil
}

func visibilityOf(d *durationpb.Duration) (time.Duration, error) {
	if d == nil || d.AsDuration() == 0 {
		return DefaultVisibility, nil
	}
	if !d.IsValid() || d.AsDuration() < time.Second || d.AsDuration() > MaxVisibility {
		return 0, status.Errorf(codes.InvalidArgument, "visibility_timeout must be between 1s and %s", MaxVisibility)
	}
	return d.AsDuration(), nil
}

func requireLease(inboxID, token string) error {
	if inboxID == "" || token == "" {
		return status.Error(codes.InvalidArgument, "inbox_id and lease_token are required")
	}
	return nil
}

// leaseStatus maps a lost lease to FAILED_PRECONDITION: the worker must stop (another may hold
// the delivery now) and must not retry the call.
func leaseStatus(ctx context.Context, s *Server, op string, err error) error {
	switch {
	case errors.Is(err, storage.ErrAlreadyAcked):
		// Still FAILED_PRECONDITION, as before the distinction, with an ErrorInfo saying the
		// work is done: a worker retrying an ack whose answer was lost can tell it from a
		// lease another worker holds.
		st := status.New(codes.FailedPrecondition, op+": "+AlreadyAckedMessage)
		if withInfo, detailErr := st.WithDetails(&errdetails.ErrorInfo{Reason: AlreadyAckedReason, Domain: ErrorDomain}); detailErr == nil {
			st = withInfo
		}
		return st.Err()
	case errors.Is(err, storage.ErrLeaseLost):
		// Said in full: a nack under the lease ends it too (a retry of one whose answer was
		// lost lands here), and a delivery whose last attempt it was is a dead letter now, not
		// with another worker.
		return status.Error(codes.FailedPrecondition, op+": lease lost (it expired, or a nack or ack under it ended it); the delivery may be with another worker, waiting for its retry, or among the dead letters")
	case errors.Is(err, storage.ErrNotFound):
		return status.Error(codes.NotFound, op+": no such delivery")
	}
	return s.storageStatus(ctx, op, err)
}

func newLeaseToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "lease_" + hex.EncodeToString(b[:]), nil
}

func inboxDeliveryToProto(d storage.LeasedDelivery) *hookverifyv1.InboxDelivery {
	out := &hookverifyv1.InboxDelivery{
		InboxId:      d.InboxID,
		EndpointId:   d.EndpointID,
		DedupeScope:  d.Scope,
		EventId:      d.EventID,
		OperationKey: d.OperationKey,
		Body:         d.Body,
		Method:       d.Method,
		Url:          d.URL,
		ReceivedAt:   timestamppb.New(d.ReceivedAt),
		Attempts:     int32(d.Attempts),
		LeaseToken:   d.LeaseToken,
		LastError:    d.LastError,
		SecretId:     d.SecretID,
	}
	if !d.LeasedUntil.IsZero() {
		out.LeasedUntil = timestamppb.New(d.LeasedUntil)
	}
	for _, h := range d.Headers {
		out.Headers = append(out.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
	}
	return out
}
