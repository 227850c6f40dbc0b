package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hookverify/hookverify/internal/ascii"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// maxEventIDBytes bounds the provider's event identity; real ones are well under 100 bytes.
const maxEventIDBytes = 512

// unopenedKeyLogInterval bounds how often a delivery meeting a secret sealed under a master key
// this instance lacks is logged: the cause is one misconfiguration, the same until a restart.
const unopenedKeyLogInterval = 10 * time.Second

// Verify authenticates a delivery, claims its event identity and stores it, in this order:
// request shape → body size (server ceiling) → endpoint (unknown, disabled) → body size
// (endpoint limit) → signature and, where signed, timestamp → event identity → claim. A
// duplicate is reported only after authentication, and a rejected delivery writes nothing.
func (s *Server) Verify(ctx context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
	start := time.Now()
	var labels verifyLabels
	resp, err := s.verify(ctx, req, &labels)
	if err == nil {
		s.metrics.observeVerdict(labels.endpoint, labels.provider, resp, time.Since(start))
	}
	// Every authentication is a use of its secret, whatever came of the delivery after it (a
	// full inbox, a store that did not commit, an event id that cannot be claimed): the provider
	// signs with that secret, and a secret that looked quiet for want of those would be retired
	// without secret retire's warning, and the provider's retries rejected as forged.
	if id := labels.secretID; id != "" {
		s.uses.note(labels.endpoint, id, s.clock())
		s.metrics.observeSecretUse(labels.endpoint, id)
	}
	return resp, err
}

// verifyLabels are the metric labels of one Verify call, known once the endpoint is found, and
// the secret that authenticated the delivery, once one did.
type verifyLabels struct{ endpoint, provider, secretID string }

func (s *Server) verify(ctx context.Context, req *hookverifyv1.VerifyRequest, labels *verifyLabels) (*hookverifyv1.VerifyResponse, error) {
	if err := validateVerifyRequest(req); err != nil {
		return nil, err
	}
	if len(req.GetBody()) > MaxBodyCeiling {
		return rejected(hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE,
			fmt.Sprintf("body is %d bytes, above the server ceiling of %d", len(req.GetBody()), MaxBodyCeiling)), nil
	}
	st, err := s.storage()
	if err != nil {
		return nil, err
	}
	if !validID(req.GetEndpointId()) {
		// No endpoint can have this id (CreateEndpoint refuses it), so there is nothing to
		// look up: an id with NUL or a byte PostgreSQL refuses, or longer than any id, must
		// not reach the database, nor the endpoint cache.
		return rejected(hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT, "no endpoint with this id"), nil
	}
	cached, err := s.lookup(ctx, st, req.GetEndpointId())
	if err != nil {
		s.claims.storeCallEnded(time.Now(), err)
		return nil, s.storageStatus(ctx, "verify", err)
	}
	if !cached.found {
		return rejected(hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT, "no endpoint with this id"), nil
	}
	endpoint := cached.endpoint
	labels.endpoint, labels.provider = endpoint.ID, endpoint.Provider
	if endpoint.Disabled {
		return rejected(hookverifyv1.RejectReason_REJECT_REASON_ENDPOINT_DISABLED, "endpoint is disabled"), nil
	}
	if int64(len(req.GetBody())) > endpoint.MaxBodyBytes {
		return rejected(hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE,
			fmt.Sprintf("body is %d bytes, above the endpoint limit of %d", len(req.GetBody()), endpoint.MaxBodyBytes)), nil
	}
	prov, ok := s.protocols.Lookup(endpoint.Provider)
	if !ok {
		// Only possible if a provider was removed from the build after endpoints were made.
		s.log.ErrorContext(ctx, "endpoint names an unknown provider", "endpoint", endpoint.ID, "provider", endpoint.Provider)
		return nil, status.Error(codes.FailedPrecondition, "endpoint's provider is not supported by this server")
	}
	now := s.clock()
	keys := cached.validKeys(now)

	preq := &protocol.Request{Method: req.GetMethod(), URL: signedURL(prov, endpoint, req.GetUrl()), Body: req.GetBody(), Headers: make(protocol.Headers, len(req.GetHeaders()))}
	for i, h := range req.GetHeaders() {
		preq.Headers[i] = protocol.Header{Name: h.GetName(), Value: h.GetValue()}
	}
	params := protocol.Params{Now: now, Tolerance: endpoint.TimestampTolerance, Options: endpoint.Options}
	result, err := prov.Verify(preq, keys, params)
	if err != nil {
		var rej *protocol.Rejection
		if errors.As(err, &rej) {
			// A mismatch may be for want of a secret this server lacks, unless the check that
			// failed involves none (Meta's verify_token), which no secret would have passed.
			mayBeKeys := rej.Reason == protocol.ReasonSignatureMismatch && !rej.WithoutKeys
			if id := cached.unopenedKeyID(now); id != "" && mayBeKeys {
				// A valid secret this instance cannot open may be the one that signed: the
				// answer is unknown here, not "forged". 401 would make PagerDuty or Okta drop
				// a genuine event for good; UNAVAILABLE makes the provider retry until the
				// instance has the key (or reaches one that has).
				if ok, heldBack := s.unopenedKeyLog.Allow(); ok {
					s.log.ErrorContext(ctx, "cannot authenticate: a valid secret is sealed under a master key this server does not hold; restart it with that key (--old-master-key-file during a rotation)",
						"endpoint", endpoint.ID, "secret_id", id, "not_logged_since_last", heldBack)
				}
				return nil, status.Error(codes.Unavailable, "a signing secret of this endpoint cannot be opened by this server, retry later")
			}
			if early := cached.scheduledKeys(now); len(early) > 0 && mayBeKeys {
				// Only a secret this server holds, scheduled to start later, signed it: the
				// provider switched before the not_before set here (its clock, or the secret
				// set at the provider early). Genuine, so not a 401 (PagerDuty and Okta drop
				// those for good), and not valid yet, so not accepted: the provider retries and
				// is accepted from the start on, and the log says what to change meanwhile.
				if signed, err := prov.Verify(preq, early, params); err == nil {
					if ok, heldBack := s.scheduledKeyLog.Allow(); ok {
						s.log.ErrorContext(ctx, "cannot accept: the delivery is signed with a secret scheduled to start later; it is answered UNAVAILABLE until then (to accept it now, add the secret again without --not-before)",
							"endpoint", endpoint.ID, "secret_id", signed.KeyID, "not_logged_since_last", heldBack)
					}
					return nil, status.Error(codes.Unavailable, "this delivery is signed with a secret of this endpoint that is not valid yet, retry later")
				}
			}
			if len(keys) == 0 && mayBeKeys {
				// Nothing to check the signature against: no secret added yet (the provider
				// shows its secret once the URL is registered, and sends events before the
				// operator adds it here), one that starts later, every one retired. The
				// delivery is neither authentic nor forged as far as this server can tell: a
				// 401 would make PagerDuty or Okta drop a genuine event for good, UNAVAILABLE
				// makes the provider retry until the secret is in. (An endpoint that should
				// take nothing more is disabled: 403.)
				if ok, heldBack := s.noSecretLog.Allow(); ok {
					s.log.ErrorContext(ctx, "cannot authenticate: the endpoint has no secret valid now; add its secret (deliveries get UNAVAILABLE and are retried meanwhile), or disable the endpoint",
						"endpoint", endpoint.ID, "not_logged_since_last", heldBack)
				}
				return nil, status.Error(codes.Unavailable, "this endpoint has no signing secret valid now, retry later")
			}
			return rejectedBy(prov, rejectReason(rej.Reason), rej.Detail), nil
		}
		s.log.ErrorContext(ctx, "protocol failure", "endpoint", endpoint.ID, "provider", endpoint.Provider, "err", err)
		return nil, status.Error(codes.Internal, "verification failed unexpectedly")
	}
	labels.secretID = result.KeyID
	if result.Handshake != nil {
		if result.HandshakeSecret != "" {
			if err := s.keepHandshakeSecret(ctx, cached, result.HandshakeSecret, now); err != nil {
				return nil, err
			}
		}
		return handshakeResponse(result), nil
	}
	if reason, detail := checkEventID(result.EventID); detail != "" {
		return rejectedBy(prov, reason, detail), nil
	}

	// A redelivery of a claim this instance has seen recently is answered from memory
	// (claimCache says why that is exact). Otherwise the claim answers redeliveries too: the
	// store reads which identities of a batch are claimed already and writes only the others,
	// so a first delivery costs no separate read. Only while backpressure refuses new events
	// does a read come first, so that redeliveries of accepted events still get DUPLICATE.
	claim, remembered := s.claims.get(endpoint.DedupeScope, result.EventID, now)
	if remembered && !s.storageAnswersMonitor() {
		// The store's health check fails (PostgreSQL unreachable, SQLite's files deleted,
		// which the store answers by refusing DUPLICATE too): while only redeliveries come,
		// no call of this path fails to silence the cache, so health does. The store answers.
		remembered = false
	}
	var why string
	if !remembered {
		why = s.overLimit(endpoint.ID, now)
	}
	switch {
	case remembered:
		s.metrics.observeClaimCacheHit()
	case why != "":
		started := time.Now()
		claim, err = st.LookupClaim(ctx, endpoint.DedupeScope, result.EventID)
		if isNotFound(err) {
			s.claims.storeCallEnded(started, nil) // the store answered
		} else {
			s.claims.storeCallEnded(started, err)
		}
		switch {
		case isNotFound(err):
			return nil, s.backpressure(endpoint.ID, why)
		case err != nil:
			return nil, s.storageStatus(ctx, "verify", err)
		}
		s.claims.put(endpoint.DedupeScope, result.EventID, claim)
	default:
		delivery := storage.Delivery{
			InboxID:      storage.NewInboxID(st),
			Scope:        endpoint.DedupeScope,
			EventID:      result.EventID,
			EndpointID:   endpoint.ID,
			OperationKey: OperationKey(endpoint.DedupeScope, result.EventID),
			SecretID:     result.KeyID,
			Method:       req.GetMethod(),
			URL:          req.GetUrl(),
			Headers:      make([]storage.Header, len(req.GetHeaders())),
			Body:         req.GetBody(),
			ReceivedAt:   now,
		}
		for i, h := range req.GetHeaders() {
			delivery.Headers[i] = storage.Header{Name: h.GetName(), Value: h.GetValue()}
		}
		var carried credentialPlaces
		carried.add(result.CredentialHeader, result.CredentialParam)
		delivery.URL = carried.redact(delivery.Headers, delivery.URL)
		claimStart := time.Now()
		claim, err = st.Claim(ctx, delivery)
		s.metrics.observeClaim(time.Since(claimStart))
		s.claims.storeCallEnded(claimStart, err)
		if err != nil {
			return nil, s.storageStatus(ctx, "verify", err)
		}
		s.claims.put(endpoint.DedupeScope, result.EventID, claim)
	}
	resp := &hookverifyv1.VerifyResponse{
		Verdict:         hookverifyv1.Verdict_VERDICT_ACCEPTED,
		EventId:         result.EventID,
		OperationKey:    claim.OperationKey,
		SecretId:        result.KeyID,
		FirstReceivedAt: timestamppb.New(claim.FirstReceivedAt),
		InboxId:         claim.InboxID,
	}
	if !claim.Accepted {
		resp.Verdict = hookverifyv1.Verdict_VERDICT_DUPLICATE
		resp.Detail = "event already accepted"
	}
	resp.Reply = successReply(prov, result.SuccessReply, resp.Verdict)
	return resp, nil
}

// Redacted replaces, in a stored delivery, the value of a header or URL query parameter that
// carried the endpoint's secret itself (protocol.Result.CredentialHeader and CredentialParam):
// the inbox keeps deliveries unencrypted and hands them to workers, and the secret must not be
// among them.
const Redacted = "REDACTED"

// credentialPlaces are where deliveries may carry an endpoint's secret itself: header names
// (compared as HTTP compares them) and URL query parameters.
type credentialPlaces struct{ headers, params []string }

func (c *credentialPlaces) add(header, param string) {
	if header != "" {
		c.headers = append(c.headers, header)
	}
	if param != "" {
		c.params = append(c.params, param)
	}
}

// redactStoredCredentials redacts, in deliveries read from the inbox to be handed out, the
// headers and URL parameters where their endpoint's protocol carries the secret itself
// (Protocol.CredentialLocation). Verify stores deliveries redacted already; this covers those
// stored by a release that did not, which the inbox may keep for ever (a dead letter), so that
// the secret never reaches a worker, who could forge deliveries with it. When an endpoint
// cannot be read, its deliveries are redacted wherever any protocol carries the secret under
// its default options.
func (s *Server) redactStoredCredentials(ctx context.Context, list []storage.LeasedDelivery) {
	places := map[string]credentialPlaces{}
	for i := range list {
		d := &list[i]
		at, ok := places[d.EndpointID]
		if !ok {
			at = s.credentialPlacesOf(ctx, d.EndpointID)
			places[d.EndpointID] = at
		}
		d.URL = at.redact(d.Headers, d.URL)
	}
}

// redact replaces, in place, the value of every header named in c with Redacted, and returns
// url with the value of every query parameter named in c replaced so too.
func (c credentialPlaces) redact(headers []storage.Header, url string) string {
	for i, h := range headers {
		for _, name := range c.headers {
			// Unicode folding, wider than the protocols' ASCII lookup (ascii.EqualFold):
			// redaction may hide a header no protocol read, never leave one it did.
			if strings.EqualFold(h.Name, name) {
				headers[i].Value = Redacted
			}
		}
	}
	for _, param := range c.params {
		url = redactQueryParam(url, param)
	}
	return url
}

// credentialPlacesOf returns where deliveries to the endpoint carry its secret (none for most
// protocols).
//
// It needs the endpoint's provider and options, not its secrets: the endpoint cache's entry
// when there is one, else the endpoint's row alone, as unknownEndpoints reads it. Loaded
// through the cache, every lease and dead-letter listing of an instance that verifies nothing
// read and decrypted every secret of the endpoints it handed out once per cache TTL, and logged
// each secret that does not open at the pace of the leases.
func (s *Server) credentialPlacesOf(ctx context.Context, endpointID string) credentialPlaces {
	var at credentialPlaces
	endpoint, found, err := s.endpointRow(ctx, endpointID)
	if err != nil || !found {
		for _, p := range s.protocols.All() {
			if p.CredentialLocation != nil {
				at.add(p.CredentialLocation(nil))
			}
		}
		return at
	}
	if p, ok := s.protocols.Lookup(endpoint.Provider); ok && p.CredentialLocation != nil {
		at.add(p.CredentialLocation(endpoint.Options))
	}
	return at
}

// endpointRowEntry is an endpoint as endpointRows caches it; found is false when no endpoint
// has the id.
type endpointRowEntry struct {
	endpoint storage.Endpoint
	found    bool
}

// endpointRow returns the endpoint from the endpoint cache when it holds it, else from the
// store without its secrets, cached for the cache's TTL (a worker-only instance leases again
// and again from the same endpoints); found is false when no endpoint has the id.
func (s *Server) endpointRow(ctx context.Context, id string) (e storage.Endpoint, found bool, err error) {
	if cached, ok := s.cache.peek(id); ok {
		return cached.endpoint, cached.found, nil
	}
	st, err := s.storage()
	if err != nil {
		return storage.Endpoint{}, false, err
	}
	row, err := s.endpointRows.get(ctx, id, func(ctx context.Context) (endpointRowEntry, error) {
		e, err := st.GetEndpoint(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return endpointRowEntry{}, nil
		}
		return endpointRowEntry{endpoint: e, found: err == nil}, err
	})
	return row.endpoint, row.found, err
}

// redactQueryParam returns rawURL with the value of every query parameter named param
// replaced by Redacted, and the rest of it, the query's order and escaping included, as it was.
func redactQueryParam(rawURL, param string) string {
	q := strings.IndexByte(rawURL, '?')
	if param == "" || q < 0 {
		return rawURL
	}
	query, fragment, hasFragment := strings.Cut(rawURL[q+1:], "#")
	parts := strings.Split(query, "&")
	for i, part := range parts {
		key, _, _ := strings.Cut(part, "=")
		// The key as Go's query parser reads it, which is how a protocol found the parameter
		// ("+" is a space; a key that does not unescape is no key at all).
		if k, err := url.QueryUnescape(key); err == nil && k == param {
			parts[i] = key + "=" + Redacted
		}
	}
	out := rawURL[:q+1] + strings.Join(parts, "&")
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

// validateVerifyRequest checks the request's shape. These are caller (edge) errors, answered
// with INVALID_ARGUMENT rather than a verdict: the provider did nothing wrong.
func validateVerifyRequest(req *hookverifyv1.VerifyRequest) error {
	// An empty id is the edge not setting the field. A long one is not checked here: the id
	// comes from the URL whoever called the edge chose, so one too long for any endpoint is
	// answered UNKNOWN_ENDPOINT like every other id no endpoint can have (see verify), not
	// INVALID_ARGUMENT, which edges answer 500 with an "edge misconfigured" error log.
	if req.GetEndpointId() == "" {
		return status.Error(codes.InvalidArgument, "endpoint_id is required")
	}
	// Every HTTP request has both, and protocols sign them (Twilio, HubSpot and Square the URL;
	// Dropbox's and Meta's handshakes are GETs): an edge that leaves one out, or sends only the
	// path, must hear that it is misconfigured, not see the deliveries of those providers
	// rejected as forged.
	if req.GetMethod() == "" {
		return status.Error(codes.InvalidArgument, "method is required")
	}
	if !isAbsoluteHTTPURL(req.GetUrl()) {
		return status.Error(codes.InvalidArgument, "url is required, absolute: http:// or https://, the host, then the path and query as received")
	}
	if len(req.GetHeaders()) > MaxHeaderCount {
		return status.Errorf(codes.InvalidArgument, "%d headers, more than the limit of %d", len(req.GetHeaders()), MaxHeaderCount)
	}
	total := 0
	for _, h := range req.GetHeaders() {
		total += len(h.GetName()) + len(h.GetValue())
	}
	if total > MaxHeaderBytes {
		return status.Errorf(codes.InvalidArgument, "headers total %d bytes, more than the limit of %d", total, MaxHeaderBytes)
	}
	if len(req.GetUrl()) > MaxURLBytes {
		return status.Errorf(codes.InvalidArgument, "url is %d bytes, more than the limit of %d", len(req.GetUrl()), MaxURLBytes)
	}
	if strings.ContainsRune(req.GetUrl(), 0) || strings.ContainsRune(req.GetMethod(), 0) {
		return status.Error(codes.InvalidArgument, "url and method must not contain NUL")
	}
	if len(req.GetMethod()) > MaxMethodBytes {
		return status.Errorf(codes.InvalidArgument, "method is longer than %d bytes", MaxMethodBytes)
	}
	return nil
}

// isAbsoluteHTTPURL reports whether u begins with an http or https scheme (in any case) and a
// host: the form of VerifyRequest.url. The rest is not parsed: it is what the provider sent.
func isAbsoluteHTTPURL(u string) bool {
	scheme, rest, ok := strings.Cut(u, "://")
	return ok && (ascii.EqualFold(scheme, "https") || ascii.EqualFold(scheme, "http")) && rest != "" && rest[0] != '/'
}

// checkEventID returns the reason and detail why an extracted event id cannot be claimed, or
// an empty detail if it can. An empty id is no identity: claimed, it would merge every later
// delivery without one into the first (and the stores refuse it, which surfaced as
// INVALID_ARGUMENT, an edge error), so it is MISSING_EVENT_ID whichever protocol let it
// through (Options.Protocols takes any). Databases refuse NUL and invalid UTF-8 in text
// columns, and an unbounded id could bloat the claim index.
func checkEventID(id string) (hookverifyv1.RejectReason, string) {
	switch {
	case id == "":
		return hookverifyv1.RejectReason_REJECT_REASON_MISSING_EVENT_ID, "the protocol found no event id"
	case len(id) > maxEventIDBytes:
		return hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD, fmt.Sprintf("event id is %d bytes, more than %d", len(id), maxEventIDBytes)
	case !utf8.ValidString(id):
		return hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD, "event id is not valid UTF-8"
	case strings.ContainsRune(id, 0):
		return hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD, "event id contains NUL"
	}
	return hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED, ""
}

// PublicURLOption is the endpoint option that replaces the forwarded URL for protocols that sign
// the URL, for edges behind proxies that cannot see the URL the provider called.
const PublicURLOption = "public_url"

// signedURL is the URL a URL-signing protocol verifies against: the endpoint's public_url when
// set (its query, if any, taken from the forwarded URL when public_url has none), else the URL
// the edge forwarded. A protocol whose credential itself travels in the query (Mailchimp's
// ?secret=) always takes the query from the delivery: taken from public_url, the credential
// would come from the endpoint's own settings and authenticate any request. AdminService
// refuses such a public_url; this also covers rows stored before it did.
func signedURL(p *protocol.Protocol, e storage.Endpoint, forwarded string) string {
	public, ok := e.Options[PublicURLOption]
	if !ok || public == "" {
		return forwarded
	}
	base, _, hasQuery := strings.Cut(public, "?")
	if hasQuery && !p.StaticCredential {
		return public
	}
	if i := strings.IndexByte(forwarded, '?'); i >= 0 {
		return base + forwarded[i:]
	}
	return base
}

// handshakeResponse answers a provider's endpoint-verification handshake; nothing is stored.
func handshakeResponse(result protocol.Result) *hookverifyv1.VerifyResponse {
	reply := &hookverifyv1.HttpReply{Status: int32(result.Handshake.Status), Body: result.Handshake.Body}
	for _, h := range result.Handshake.Headers {
		reply.Headers = append(reply.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
	}
	return &hookverifyv1.VerifyResponse{
		Verdict:  hookverifyv1.Verdict_VERDICT_HANDSHAKE,
		Detail:   "provider handshake answered; nothing stored",
		SecretId: result.KeyID,
		Reply:    reply,
	}
}
