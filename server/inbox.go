package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// DeadLetterExhausted moves the pending deliveries that have no attempts left under this
// server's MaxAttempts to the dead letters, and returns how many it moved. There are such
// deliveries only when MaxAttempts was lowered since they were nacked; no lease would ever
// take them, yet they would count as pending for ever (stats, backpressure). Their last error
// says why. Run it once the store is open, before serving; RunRetention runs it again every
// exhaustedCheckInterval. It reads every pending delivery.
func (s *Server) DeadLetterExhausted(ctx context.Context, st storage.InboxStore) (int64, error) {
	req := storage.ExhaustedRequest{
		MaxAttempts: s.maxAttempts,
		Reason:      fmt.Sprintf("attempts used up: --max-attempts lowered to %d", s.maxAttempts),
		Batch:       exhaustedBatch,
		Now:         s.clock(),
	}
	var moved int64
	for {
		n, err := st.DeadLetterExhausted(ctx, req)
		moved += n
		s.metrics.observeExhausted(n)
		if err != nil {
			return moved, fmt.Errorf("dead-letter deliveries with no attempts left: %w", err)
		}
		if n < int64(req.Batch) {
			break
		}
	}
	if moved > 0 {
		s.log.WarnContext(ctx, "pending deliveries with no attempts left under --max-attempts moved to the dead letters",
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
	})
	if err != nil {
		return nil, storageStatus(ctx, s.log, "lease", err)
	}
	s.metrics.observeLease(result)
	resp := &hookverifyv1.LeaseResponse{Deliveries: make([]*hookverifyv1.InboxDelivery, len(result.Deliveries))}
	for i, d := range result.Deliveries {
		resp.Deliveries[i] = inboxDeliveryToProto(d)
	}
	return resp, nil
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
		} else {
			s.metrics.observeAck()
		}
		resp.Results[i] = result
	}
	return resp, nil
}

// Nack gives a leased delivery back for a later attempt.
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
	now := s.clock()
	until := now.Add(visibility)
	if err := ib.ExtendLease(ctx, req.GetInboxId(), req.GetLeaseToken(), until, now); err != nil {
		return nil, leaseStatus(ctx, s, "extend lease", err)
	}
	return &hookverifyv1.ExtendLeaseResponse{LeasedUntil: timestamppb.New(until)}, nil
}

// ListDeadLetters lists deliveries that used all their attempts.
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
	// Bounded as a lease is: the bodies are read into memory and one answer.
	dead, err := ib.ListDeadLetters(ctx, storage.InboxFilter{EndpointIDs: req.GetEndpointIds(), Scopes: req.GetDedupeScopes()}, limit, maxLeaseBytes)
	if err != nil {
		return nil, storageStatus(ctx, s.log, "list dead letters", err)
	}
	resp := &hookverifyv1.ListDeadLettersResponse{Deliveries: make([]*hookverifyv1.InboxDelivery, len(dead))}
	for i, d := range dead {
		resp.Deliveries[i] = inboxDeliveryToProto(d)
	}
	return resp, nil
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
	if err := ib.Requeue(ctx, req.GetInboxId(), s.clock()); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, status.Errorf(codes.NotFound, "no dead delivery %q", req.GetInboxId())
		}
		return nil, storageStatus(ctx, s.log, "requeue", err)
	}
	s.log.InfoContext(ctx, "dead delivery requeued", "inbox_id", req.GetInboxId())
	return &hookverifyv1.RequeueResponse{}, nil
}

// GetInboxStats reports each endpoint's inbox.
func (s *Server) GetInboxStats(ctx context.Context, _ *hookverifyv1.GetInboxStatsRequest) (*hookverifyv1.GetInboxStatsResponse, error) {
	ib, err := s.inbox()
	if err != nil {
		return nil, err
	}
	stats, err := ib.InboxStats(ctx)
	if err != nil {
		return nil, storageStatus(ctx, s.log, "inbox stats", err)
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
	case errors.Is(err, storage.ErrLeaseLost):
		return status.Error(codes.FailedPrecondition, op+": lease lost (expired, or already acked); the delivery may be with another worker")
	case errors.Is(err, storage.ErrNotFound):
		return status.Error(codes.NotFound, op+": no such delivery")
	}
	return storageStatus(ctx, s.log, op, err)
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
