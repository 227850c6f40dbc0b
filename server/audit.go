package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// Page sizes of ListAuditEvents and RekeySecrets.
const (
	defaultAuditPage = 100
	maxAuditPage     = 1000
	defaultRekeyMax  = 100
	maxRekeyMax      = 1000
)

// pageSize reads a request's size field: zero means def, anything outside [0, max] is refused.
func pageSize(field string, value int32, def, max int) (int, error) {
	switch {
	case value == 0:
		return def, nil
	case value < 0 || int(value) > max:
		return 0, status.Errorf(codes.InvalidArgument, "%s must be between 0 and %d", field, max)
	}
	return int(value), nil
}

// listPageSize is a listing's page size (AIP-158): the default for zero, the maximum for more
// than it (a client asking for more gets full pages and goes on with the page token, as
// AIP-158 has it, rather than an error), INVALID_ARGUMENT for a negative one.
func listPageSize(value int32, def, max int) (int, error) {
	if value < 0 {
		return 0, status.Errorf(codes.InvalidArgument, "page_size must not be negative (0 for the default of %d, at most %d)", def, max)
	}
	return pageSize("page_size", min(value, int32(max)), def, max)
}

// audited returns ctx carrying the audit event of an administrative action, which the store
// records in the transaction of the change. Actor is the authenticated caller. detail must
// never contain secret material.
func (s *Server) audited(ctx context.Context, action, endpointID, secretID, detail string) (context.Context, error) {
	id, err := newAuditID()
	if err != nil {
		return nil, status.Error(codes.Internal, "cannot generate an audit event id")
	}
	return storage.WithAuditEvent(ctx, storage.AuditEvent{
		ID:         id,
		At:         s.clock(),
		Actor:      PrincipalFrom(ctx).Name,
		Action:     action,
		EndpointID: endpointID,
		SecretID:   secretID,
		Detail:     detail,
	}), nil
}

func newAuditID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "aud_" + hex.EncodeToString(b[:]), nil
}

// describeEndpoint lists an endpoint's settings for the audit trail. Options are listed with
// their values: they are URLs and flags, and the few that are credentials (Meta's
// verify_token) are digests by then (endpointFromProto).
func describeEndpoint(e storage.Endpoint) string {
	return fmt.Sprintf("provider=%s dedupe_scope=%s timestamp_tolerance=%s max_body_bytes=%d disabled=%t options=%s",
		e.Provider, e.DedupeScope, e.TimestampTolerance, e.MaxBodyBytes, e.Disabled, describeOptions(e.Options))
}

func describeOptions(options map[string]string) string {
	parts := make([]string, 0, len(options))
	for _, k := range slices.Sorted(maps.Keys(options)) {
		parts = append(parts, k+"="+options[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// endpointChanges lists what an update changes, "no change" when nothing.
func endpointChanges(before, after storage.Endpoint) string {
	var changes []string
	add := func(name string, from, to any) {
		if fmt.Sprint(from) != fmt.Sprint(to) {
			changes = append(changes, fmt.Sprintf("%s: %v -> %v", name, from, to))
		}
	}
	add("timestamp_tolerance", before.TimestampTolerance, after.TimestampTolerance)
	add("max_body_bytes", before.MaxBodyBytes, after.MaxBodyBytes)
	add("disabled", before.Disabled, after.Disabled)
	add("options", describeOptions(before.Options), describeOptions(after.Options))
	if len(changes) == 0 {
		return "no change"
	}
	return strings.Join(changes, "; ")
}

// describeSecret names a new secret's fingerprint and validity window.
func describeSecret(sec storage.Secret) string {
	d := "fingerprint=" + sec.Fingerprint
	if !sec.NotBefore.IsZero() {
		d += " not_before=" + sec.NotBefore.Format(time.RFC3339Nano)
	}
	if !sec.NotAfter.IsZero() {
		d += " not_after=" + sec.NotAfter.Format(time.RFC3339Nano)
	}
	return d
}

// fingerprint returns the stored fingerprint, or computes it for a secret stored before
// fingerprints existed (empty if the secret does not open with the keys this server holds).
func (s *Server) fingerprint(sec storage.Secret) string {
	if sec.Fingerprint != "" {
		return sec.Fingerprint
	}
	material, err := s.keyring.Open(sec.KeyID, sec.EndpointID, sec.ID, sec.Sealed)
	if err != nil {
		return ""
	}
	defer clear(material)
	return secretbox.Fingerprint(sec.EndpointID, material)
}

// ListAuditEvents returns recorded administrative actions, oldest first, a page at a time:
// the page token is the last listed event's place in the order (time, then id), after which
// the next page starts. A time alone cannot say where: many events share one (a rotation's,
// a rekey's, those of one clock tick), and a caller going on from the last event's time
// skipped or repeated them, so no auditor could read a trail longer than a page reliably.
func (s *Server) ListAuditEvents(ctx context.Context, req *hookverifyv1.ListAuditEventsRequest) (*hookverifyv1.ListAuditEventsResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	limit, err := listPageSize(req.GetPageSize(), defaultAuditPage, maxAuditPage)
	if err != nil {
		return nil, err
	}
	// One more than the page, so that the last page says it is the last without the caller
	// asking for an empty one.
	filter := storage.AuditFilter{EndpointID: req.GetEndpointId(), Limit: limit + 1}
	var endpoint, since, until []string
	if filter.EndpointID != "" {
		endpoint = []string{filter.EndpointID}
	}
	for _, t := range []struct {
		ts   *timestamppb.Timestamp
		name string
		into *time.Time
		hash *[]string
	}{{req.GetStartTime(), "start_time", &filter.Since, &since}, {req.GetEndTime(), "end_time", &filter.Until, &until}} {
		if t.ts == nil {
			continue
		}
		if !t.ts.IsValid() {
			return nil, status.Errorf(codes.InvalidArgument, "%s is not a valid timestamp", t.name)
		}
		*t.hash = []string{t.ts.AsTime().UTC().Format(time.RFC3339Nano)}
		// Events are stored to the microsecond, the bounds given to the nanosecond: an event
		// at T is "at or after" start_time and "before" end_time exactly when it is so of
		// the bound rounded up to the next microsecond. Passed as they are, the stores
		// truncated or rounded them, and listed an event before start_time (after the last
		// one seen plus a nanosecond, say) or left out one before end_time.
		*t.into = ceilMicro(t.ts.AsTime().UTC())
	}
	// Each filter a list of its own, so that a start_time passed as end_time is another listing.
	hash := setsHash(endpoint, since, until)
	if req.GetEndTime() != nil && filter.Until.IsZero() {
		// Before the first instant a Timestamp holds: no event. Passed on, the stores would read
		// the zero time as no bound and list every one.
		if token := req.GetPageToken(); token != "" {
			if _, err := auditPages.parse(token, hash); err != nil {
				return nil, err
			}
		}
		return &hookverifyv1.ListAuditEventsResponse{}, nil
	}
	if token := req.GetPageToken(); token != "" {
		place, err := auditPages.parse(token, hash)
		if err != nil {
			return nil, err
		}
		at, id, ok := parseTimedPlace(place)
		if !ok {
			return nil, auditPages.invalid()
		}
		filter.After = storage.AuditKey{At: at, ID: id}
	}
	events, err := st.ListAuditEvents(ctx, filter)
	if err != nil {
		return nil, s.storageStatus(ctx, "list audit events", err)
	}
	more := len(events) > limit
	events = events[:min(len(events), limit)]
	list := make([]*hookverifyv1.AuditEvent, len(events))
	for i, ev := range events {
		list[i] = &hookverifyv1.AuditEvent{
			Id: ev.ID, Time: timestamppb.New(ev.At), Actor: ev.Actor, Action: ev.Action,
			EndpointId: ev.EndpointID, SecretId: ev.SecretID, Detail: cutDetail(ev.Detail),
		}
	}
	// An event's detail lists an endpoint's options, which can be long: the page ends before
	// the event that would pass the client's limit, and the next starts there.
	n := fittingItems(list)
	resp := &hookverifyv1.ListAuditEventsResponse{Events: list[:n]}
	if more || n < len(list) {
		last := events[n-1]
		resp.NextPageToken = auditPages.token(hash, timedPlace(last.At, last.ID))
	}
	return resp, nil
}

// maxDetailAnswer bounds an event's detail in a ListAuditEvents answer. Events are written
// within it (endpoint options are bounded, maxOptionsBytes), but one about an endpoint whose
// options were stored before that bound could pass a client's 4 MiB receive limit alone, and
// then every page reaching it failed for good, hiding every later event.
const maxDetailAnswer = 3 << 20

// cutDetail returns detail, or for one longer than maxDetailAnswer its start, cut at a UTF-8
// boundary, and how long it is in the trail.
func cutDetail(detail string) string {
	if len(detail) <= maxDetailAnswer {
		return detail
	}
	end := maxDetailAnswer
	for end > 0 && !utf8.RuneStart(detail[end]) {
		end--
	}
	return detail[:end] + fmt.Sprintf(" ... (cut here: the detail recorded is %d bytes)", len(detail))
}

// ceilMicro returns t rounded up to a whole microsecond.
func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); c.Before(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// auditPages are ListAuditEvents' page tokens: "a1:<filter hash>:<time in Unix µs>:<event id>".
var auditPages = pageTokens{version: "a1", rpc: "ListAuditEvents", filters: "endpoint_id, start_time or end_time"}

// RekeySecrets re-encrypts secrets sealed under older master keys with the current one, while
// the server keeps serving: the keyring opens both until every secret is moved. Each reseal is
// conditional on the key the secret was read under, so concurrent rekeys (several instances,
// several calls) never overwrite each other with stale material.
func (s *Server) RekeySecrets(ctx context.Context, req *hookverifyv1.RekeySecretsRequest) (*hookverifyv1.RekeySecretsResponse, error) {
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	limit, err := pageSize("max_secrets", req.GetMaxSecrets(), defaultRekeyMax, maxRekeyMax)
	if err != nil {
		return nil, err
	}
	endpoints, err := st.ListEndpoints(ctx)
	if err != nil {
		return nil, s.storageStatus(ctx, "rekey", err)
	}
	current := s.keyring.CurrentKeyID()
	resp := &hookverifyv1.RekeySecretsResponse{CurrentKeyId: current}
	now := s.clock()
	for _, e := range endpoints {
		secrets, err := st.ListSecrets(ctx, e.ID)
		if err != nil {
			return nil, s.storageStatus(ctx, "rekey", err)
		}
		for _, sec := range secrets {
			if sec.KeyID == current {
				continue
			}
			if int(resp.Resealed) >= limit {
				resp.Remaining++
				continue
			}
			done, err := s.reseal(ctx, st, sec)
			switch {
			case (errors.Is(err, secretbox.ErrUnknownKey) || errors.Is(err, secretbox.ErrOpen)) && sec.EndedAt(now):
				// It can never authenticate again: nothing is lost with its key, and an operator
				// who lost that key can still finish a rotation (the caller need not fail).
				resp.EndedUnreadableSecretIds = append(resp.EndedUnreadableSecretIds, sec.ID)
			case errors.Is(err, secretbox.ErrUnknownKey), errors.Is(err, secretbox.ErrOpen):
				resp.UnreadableSecretIds = append(resp.UnreadableSecretIds, sec.ID)
				if errors.Is(err, secretbox.ErrOpen) {
					// The response says only unreadable, which the CLI explains as a key not
					// given; this one's key is here, and no key will open it.
					s.log.ErrorContext(ctx, "secret does not open under the master key it names, which this server holds: its sealed material was damaged or altered in the database; add the provider's current secret anew, then retire this one",
						"endpoint", sec.EndpointID, "secret_id", sec.ID, "key_id", sec.KeyID)
				}
			case err != nil:
				return nil, s.storageStatus(ctx, "rekey", err)
			case done:
				resp.Resealed++
			}
		}
	}
	s.log.InfoContext(ctx, "secrets rekeyed", "key_id", current, "resealed", resp.Resealed,
		"remaining", resp.Remaining, "unreadable", len(resp.UnreadableSecretIds), "ended_unreadable", len(resp.EndedUnreadableSecretIds))
	return resp, nil
}

// reseal moves one secret to the current master key, recording it in the audit trail.
func (s *Server) reseal(ctx context.Context, st storage.SecretStore, sec storage.Secret) (bool, error) {
	material, err := s.keyring.Open(sec.KeyID, sec.EndpointID, sec.ID, sec.Sealed)
	if err != nil {
		return false, err
	}
	defer clear(material)
	keyID, sealed, err := s.keyring.Seal(sec.EndpointID, sec.ID, material)
	if err != nil {
		return false, err
	}
	auditCtx, err := s.audited(ctx, "secret.rekey", sec.EndpointID, sec.ID, sec.KeyID+" -> "+keyID)
	if err != nil {
		return false, err
	}
	return st.ResealSecret(auditCtx, sec.EndpointID, sec.ID, sec.KeyID, keyID, sealed)
}
