package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// Metrics are hookverify's Prometheus metrics. Two kinds of health are measured apart: delivery
// health (verdicts, latency, rejections by reason) and business completion (what waits in the
// inbox, for how long, and what gave up). A fast 200 to providers while the inbox piles up shows
// as a growing oldest-pending age.
type Metrics struct {
	Registry *prometheus.Registry

	verdicts          *prometheus.CounterVec
	secretUses        *prometheus.CounterVec
	verifyLatency     prometheus.Histogram
	claimLatency      prometheus.Histogram
	claimCacheHit     prometheus.Counter
	batchClaims       prometheus.Histogram
	batchLatency      prometheus.Histogram
	batchFailures     prometheus.Counter
	rpcs              *prometheus.CounterVec
	rpcLatency        *prometheus.HistogramVec
	inboxPending      *prometheus.GaugeVec
	inboxLeased       *prometheus.GaugeVec
	inboxDead         *prometheus.GaugeVec
	inboxOldest       *prometheus.GaugeVec
	inboxStatsAt      prometheus.Gauge
	redeliveries      prometheus.Counter
	leaseExpiries     prometheus.Counter
	deadLettered      *prometheus.CounterVec
	acks              prometheus.Counter
	nacks             *prometheus.CounterVec
	backpressure      *prometheus.CounterVec
	verifyBytesFull   prometheus.Counter
	sweptInbox        prometheus.Counter
	sweptClaims       prometheus.Counter
	authFailures      *prometheus.CounterVec
	handshakeFailures prometheus.Counter

	// inboxMu serializes the writes of inbox statistics to the inbox gauges; inboxEndpoints
	// are the endpoints whose inbox gauges are exported.
	inboxMu        sync.Mutex
	inboxEndpoints map[string]bool
}

// latencyBuckets are the buckets of every latency histogram: 0.5 ms to 16.4 s, doubling, so
// that a latency nearing a provider's timeout (GitHub waits 10 s) is measured rather than
// counted past the last bucket.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

// NewMetrics registers hookverify's metrics, plus the Go and process collectors, on a new
// registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_verdicts_total",
			Help: "Verify answers by endpoint, provider, verdict and reject reason."}, []string{"endpoint", "provider", "verdict", "reason"}),
		secretUses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_secret_verifications_total",
			Help: "Deliveries authenticated, by endpoint and the secret that matched: shows when an old secret has gone quiet before retiring it."}, []string{"endpoint", "secret_id"}),
		verifyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookverify_verify_duration_seconds",
			Help: "Verify latency: answered calls, and calls their caller gave up on (cancelled, or past their deadline), timed until they ended.", Buckets: latencyBuckets}),
		claimLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookverify_storage_claim_duration_seconds",
			Help: "Time to commit a claim and its inbox record.", Buckets: latencyBuckets}),
		claimCacheHit: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_claim_cache_hits_total",
			Help: "Redeliveries answered DUPLICATE from the claims this instance remembers, without a database read."}),
		batchClaims: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookverify_storage_claim_batch_size",
			Help: "Claims per group-commit batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 8)}),
		batchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookverify_storage_claim_batch_duration_seconds",
			Help:    "Time to commit one batch of claims, committed or not. Its rate of sum is the share of time the claim pipeline is busy (up to 4 on CockroachDB, which commits four lanes at once).",
			Buckets: latencyBuckets}),
		batchFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_storage_claim_batch_failures_total",
			Help: "Claim batches that did not commit. Their claims were answered UNAVAILABLE, but on SQLite, where each claim is tried once more in a later batch, which may commit it."}),
		rpcs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_grpc_requests_total",
			Help: "gRPC calls by method and status code."}, []string{"method", "code"}),
		rpcLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hookverify_grpc_request_duration_seconds",
			Help: "gRPC call latency by method.", Buckets: latencyBuckets}, []string{"method"}),
		inboxPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookverify_inbox_pending",
			Help: "Deliveries waiting for a worker, by endpoint."}, []string{"endpoint"}),
		inboxLeased: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookverify_inbox_leased",
			Help: "Deliveries leased by a worker, by endpoint."}, []string{"endpoint"}),
		inboxDead: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookverify_inbox_dead",
			Help: "Dead-lettered deliveries, by endpoint."}, []string{"endpoint"}),
		inboxOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookverify_inbox_oldest_pending_age_seconds",
			Help: "How long the delivery waiting longest for a worker has waited, by endpoint: the business-completion alarm. A pending delivery waits from when it became visible; a leased one whose lease ran out (its worker died or hung), from when the lease ended. While the inbox statistics cannot be read the age keeps growing from the last read (see hookverify_inbox_stats_last_success_timestamp_seconds)."}, []string{"endpoint"}),
		inboxStatsAt: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookverify_inbox_stats_last_success_timestamp_seconds",
			Help: "When the inbox monitor last read the inbox statistics, in Unix seconds (0 until it first does): the inbox gauges and the backpressure snapshot are that old. Alert when time() minus this stays well above the scrape interval (e.g. over 60 s for 2 minutes): the monitor reads every second, less often while reads are slow."}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_inbox_redeliveries_total",
			Help: "Leases of a delivery on its second attempt or later: after a lease expired or a nack. One given back with a not_attempted nack is leased again on the same attempt: not counted if that is its first, counted again if it is a later one."}),
		leaseExpiries: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_inbox_lease_expiries_total",
			Help: "Leases that expired without ack, nack or extension (a worker crashed, hung or overran), counted when the next lease takes the delivery over or dead-letters it, or when the server dead-letters an expired last attempt no lease took."}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_inbox_dead_lettered_total",
			Help: "Deliveries moved to the dead letters, by cause: a nack on the last attempt (nack), the last attempt's lease expiring (lease_expired), or a start with a max attempts lower than a pending delivery had used (max_attempts_lowered)."}, []string{"cause"}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_inbox_acks_total",
			Help: "Deliveries acked by workers."}),
		nacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_inbox_nacks_total",
			Help: "Deliveries nacked by workers, by outcome: to be retried (retry), moved to the dead letters on the last attempt (dead_lettered), or given back unrun with not_attempted, the attempt not spent (given_back). A worker that gives back every delivery it leases (one stopping in a loop) shows only here."}, []string{"outcome"}),
		backpressure: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_backpressure_total",
			Help: "New deliveries refused with RESOURCE_EXHAUSTED because an inbox limit was reached, by endpoint."}, []string{"endpoint"}),
		verifyBytesFull: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_verify_bytes_refusals_total",
			Help: "Verify calls refused with RESOURCE_EXHAUSTED because the server held --max-verify-bytes of requests at once (claims waiting on a slow database)."}),
		sweptInbox: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_retention_inbox_deleted_total",
			Help: "Acked inbox records deleted by retention."}),
		sweptClaims: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_retention_claims_deleted_total",
			Help: "Claims deleted after the dedupe window."}),
		handshakeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_tls_handshake_failures_total",
			Help: "TLS handshakes callers failed: an untrusted or expired client certificate, a plaintext caller, a connection closed before its hello."}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_auth_failures_total",
			Help: "Calls refused UNAUTHENTICATED or PERMISSION_DENIED, by code and method."}, []string{"code", "method"}),
	}
	r.MustRegister(m.handshakeFailures, m.verdicts, m.secretUses, m.verifyLatency, m.claimLatency, m.claimCacheHit, m.batchClaims, m.batchLatency, m.batchFailures, m.rpcs, m.rpcLatency, m.inboxPending, m.inboxLeased,
		m.inboxDead, m.inboxOldest, m.inboxStatsAt, m.redeliveries, m.leaseExpiries, m.deadLettered, m.acks, m.nacks, m.backpressure, m.verifyBytesFull, m.sweptInbox, m.sweptClaims, m.authFailures,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	// Every cause is exported from the start, at 0: increase() and rate() need a sample before
	// the rise, and a series that first appeared at 1 would show no increase at all. (What
	// serve dead-letters at start, spent under a lowered --max-attempts, is counted before the
	// first scrape, so increase() misses it even so: hookverify_inbox_dead and the log show it.)
	for _, cause := range []string{"nack", "lease_expired", "max_attempts_lowered"} {
		m.deadLettered.WithLabelValues(cause)
	}
	for _, outcome := range []string{"retry", "dead_lettered", "given_back"} {
		m.nacks.WithLabelValues(outcome)
	}
	// So is UNAVAILABLE for every method README's alert watches it on: a store outage that
	// fails one call, then none, is otherwise a series that appears at 1 and that rate() over
	// it never sees rise.
	for method := range methodRules {
		m.rpcs.WithLabelValues(method, codes.Unavailable.String())
	}
	return m
}

// verdictLabels and reasonLabels are the metric label of every enum value ("accepted",
// "signature_mismatch"), computed once rather than per call.
var (
	verdictLabels = enumLabels(hookverifyv1.Verdict_name, "VERDICT_", func(v int32) hookverifyv1.Verdict { return hookverifyv1.Verdict(v) })
	reasonLabels  = enumLabels(hookverifyv1.RejectReason_name, "REJECT_REASON_", func(v int32) hookverifyv1.RejectReason { return hookverifyv1.RejectReason(v) })
)

func enumLabels[E comparable](names map[int32]string, prefix string, enum func(int32) E) map[E]string {
	labels := make(map[E]string, len(names))
	for v, name := range names {
		labels[enum(v)] = strings.ToLower(strings.TrimPrefix(name, prefix))
	}
	return labels
}

// observeVerdict counts one Verify answer. The endpoint label is only set for endpoints that
// exist, so unknown ids sent by a misbehaving caller cannot blow up the label space.
func (m *Metrics) observeVerdict(endpoint, provider string, resp *hookverifyv1.VerifyResponse, took time.Duration) {
	if m == nil {
		return
	}
	reason := ""
	if resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED {
		reason = reasonLabels[resp.GetRejectReason()]
	}
	m.verdicts.WithLabelValues(endpoint, provider, verdictLabels[resp.GetVerdict()], reason).Inc()
	m.verifyLatency.Observe(took.Seconds())
}

// secretInForce exports a secret's verification counter at 0 before its first use, for the
// same reason as the alerted counters (NewMetrics): the rotation runbook watches traffic move
// to a new secret with rate(), which never sees the rise of a series that appears at 1.
func (m *Metrics) secretInForce(endpoint, secretID string) {
	if m != nil {
		m.secretUses.WithLabelValues(endpoint, secretID)
	}
}

func (m *Metrics) observeSecretUse(endpoint, secretID string) {
	if m != nil {
		m.secretUses.WithLabelValues(endpoint, secretID).Inc()
	}
}

func (m *Metrics) observeClaim(took time.Duration) {
	if m != nil {
		m.claimLatency.Observe(took.Seconds())
	}
}

// observeClaimBatch records one group-commit batch (storage.ClaimBatcher.ObserveBatches).
func (m *Metrics) observeClaimBatch(b storage.ClaimBatchStats) {
	m.batchClaims.Observe(float64(b.Claims))
	m.batchLatency.Observe(b.Took.Seconds())
	if !b.Committed {
		m.batchFailures.Inc()
	}
}

func (m *Metrics) observeClaimCacheHit() {
	if m != nil {
		m.claimCacheHit.Inc()
	}
}

// interceptor counts and times every call. A handler that panics is counted as INTERNAL, what
// recoverInterceptor (outside this one) answers it, and its panic goes on to that one.
//
// A Verify its caller gave up on (CANCELLED, DEADLINE_EXCEEDED) is timed in
// hookverify_verify_duration_seconds too, which Verify itself observes for answered calls only:
// the calls an edge cuts off at its deadline are the slowest, and a latency alert on the
// answered rest stayed quiet while every slow delivery timed out.
func (m *Metrics) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	code := codes.Internal
	defer func() {
		took := time.Since(start).Seconds()
		m.rpcs.WithLabelValues(info.FullMethod, code.String()).Inc()
		m.rpcLatency.WithLabelValues(info.FullMethod).Observe(took)
		if info.FullMethod == hookverifyv1.VerifierService_Verify_FullMethodName && err != nil && (code == codes.Canceled || code == codes.DeadlineExceeded) {
			m.verifyLatency.Observe(took)
		}
	}()
	resp, err = handler(ctx, req)
	code = status.Code(err)
	return resp, err
}

func (m *Metrics) observeLease(result storage.LeaseResult) {
	if m == nil {
		return
	}
	for _, d := range result.Deliveries {
		if d.Attempts > 1 {
			m.redeliveries.Inc()
		}
		if d.PreviousLeaseExpired {
			m.leaseExpiries.Inc()
		}
	}
	m.observeExpiredToDead(result.ExpiredToDead)
}

// observeExpiredToDead counts n deliveries moved to dead because their last attempt's lease
// expired, by a lease or by the server's check (deadLetterExpiredLeases).
func (m *Metrics) observeExpiredToDead(n int64) {
	if m != nil && n > 0 {
		m.leaseExpiries.Add(float64(n))
		m.deadLettered.WithLabelValues("lease_expired").Add(float64(n))
	}
}

func (m *Metrics) observeAck() {
	if m != nil {
		m.acks.Inc()
	}
}

func (m *Metrics) observeNack(dead bool) {
	switch {
	case m == nil:
	case dead:
		m.deadLettered.WithLabelValues("nack").Inc()
		m.nacks.WithLabelValues("dead_lettered").Inc()
	default:
		m.nacks.WithLabelValues("retry").Inc()
	}
}

func (m *Metrics) observeGiveBack() {
	if m != nil {
		m.nacks.WithLabelValues("given_back").Inc()
	}
}

func (m *Metrics) observeVerifyBytesFull() {
	if m != nil {
		m.verifyBytesFull.Inc()
	}
}

func (m *Metrics) observeExhausted(n int64) {
	if m != nil && n > 0 {
		m.deadLettered.WithLabelValues("max_attempts_lowered").Add(float64(n))
	}
}

// setInboxStats sets the inbox gauges from a read of the inbox statistics at now: each
// endpoint's series is overwritten in place, and only then are the series of endpoints the read
// no longer has deleted. (Resetting the vectors first left a gap in which a scrape found no
// inbox gauge at all: to Prometheus the series went stale, which resets the `for` of every
// alert on them.)
func (m *Metrics) setInboxStats(stats []storage.EndpointInboxStats, now time.Time) {
	m.inboxMu.Lock()
	defer m.inboxMu.Unlock()
	seen := make(map[string]bool, len(stats))
	for _, st := range stats {
		seen[st.EndpointID] = true
		m.inboxPending.WithLabelValues(st.EndpointID).Set(float64(st.Pending))
		m.inboxLeased.WithLabelValues(st.EndpointID).Set(float64(st.Leased))
		m.inboxDead.WithLabelValues(st.EndpointID).Set(float64(st.Dead))
		m.inboxOldest.WithLabelValues(st.EndpointID).Set(waitingAge(st, now))
		// The backpressure counter of an endpoint with unfinished deliveries is exported at 0
		// before any refusal (for the same reason as the dead-letter causes): a per-endpoint
		// limit refuses only an endpoint this read has seen, since limits are checked against
		// it. The series stays when the endpoint's inbox empties, as a counter's should.
		m.backpressure.WithLabelValues(st.EndpointID)
	}
	for endpointID := range m.inboxEndpoints {
		if !seen[endpointID] {
			for _, g := range []*prometheus.GaugeVec{m.inboxPending, m.inboxLeased, m.inboxDead, m.inboxOldest} {
				g.DeleteLabelValues(endpointID)
			}
		}
	}
	m.inboxEndpoints = seen
	m.inboxStatsAt.Set(float64(now.UnixMicro()) / 1e6)
}

// ageInbox sets the oldest-pending gauges from the last read, stats, at now, while the inbox
// statistics cannot be read: nothing can be acked meanwhile.
func (m *Metrics) ageInbox(stats []storage.EndpointInboxStats, now time.Time) {
	m.inboxMu.Lock()
	defer m.inboxMu.Unlock()
	for _, st := range stats {
		if m.inboxEndpoints[st.EndpointID] {
			m.inboxOldest.WithLabelValues(st.EndpointID).Set(waitingAge(st, now))
		}
	}
}

func (m *Metrics) observeSweep(r storage.SweepResult) {
	if m != nil {
		m.sweptInbox.Add(float64(r.InboxDeleted))
		m.sweptClaims.Add(float64(r.ClaimsDeleted))
	}
}

// observeAuthFailure counts a refused call. The method label comes from the registered
// services only (grpc-go answers unknown methods itself, and authTap counts only methods of
// methodRules), so it stays bounded.
func (m *Metrics) observeAuthFailure(method string, code codes.Code) {
	if m != nil {
		m.authFailures.WithLabelValues(code.String(), method).Inc()
	}
}

// observeRefusedAtHeaders counts in hookverify_grpc_requests_total a call authTap refused
// before its message was read, which the interceptor counting the others never sees; no
// duration is observed, no handler having run.
func (m *Metrics) observeRefusedAtHeaders(method string, code codes.Code) {
	if m != nil {
		m.rpcs.WithLabelValues(method, code.String()).Inc()
	}
}

// observeHandshakeFailure counts a failed TLS handshake.
func (m *Metrics) observeHandshakeFailure() {
	if m != nil {
		m.handshakeFailures.Inc()
	}
}
