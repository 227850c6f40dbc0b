package faults

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// hostileCase is one kind of hostile request and the answer it must get: a gRPC code other
// than OK, or else a verdict with one of the reasons.
type hostileCase struct {
	name    string
	build   func(n int) *hookverifyv1.VerifyRequest // n numbers the repetitions
	raw     func() []byte                           // instead of build: wire bytes proto cannot produce
	code    codes.Code
	verdict hookverifyv1.Verdict
	reasons []hookverifyv1.RejectReason
	repeat  int
}

// TestHostileInput sends the real server every kind of hostile request we know of, a few
// times each, while another client keeps delivering valid events. Each hostile request gets a
// clear rejection (a REJECTED verdict with its reason, or INVALID_ARGUMENT; see the table for
// the two framework-level answers); the other client is served throughout; and the server's
// memory does not grow with repeated bursts. It runs on PostgreSQL, the stricter store (TEXT
// columns refuse NUL and invalid UTF-8).
func TestHostileInput(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	p := startProcess(t, "server", postgresArgs(url, masterKeyFile(t))...)
	conn := p.dial()
	defer conn.Close()
	stripe := createEndpoint(t, conn, "hostile-stripe", "stripe")
	github := createEndpoint(t, conn, "hostile-github", "github")
	bystander := createEndpoint(t, conn, "bystander", "github")

	// Stripe signs "{t}.{body}" with the whole whsec_ string as the key; these sign any t.
	stripeSign := func(t string, body []byte) string {
		mac := hmac.New(sha256.New, []byte(stripe.secret))
		mac.Write([]byte(t + "."))
		mac.Write(body)
		return "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))
	}
	stripeReq := func(sig string, body []byte) *hookverifyv1.VerifyRequest {
		return &hookverifyv1.VerifyRequest{EndpointId: stripe.id, Method: "POST", Url: "https://hooks.example.com/s", Body: body,
			Headers: []*hookverifyv1.HeaderField{{Name: "Stripe-Signature", Value: sig}}}
	}
	now := func() string { return strconv.FormatInt(time.Now().Unix(), 10) }
	withHeader := func(req *hookverifyv1.VerifyRequest, name, value string) *hookverifyv1.VerifyRequest {
		req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: name, Value: value})
		return req
	}
	// raw replaces a placeholder of a marshalled request with bytes proto3 strings cannot hold.
	raw := func(req *hookverifyv1.VerifyRequest, placeholder, with string) func() []byte {
		return func() []byte {
			b, err := proto.Marshal(req)
			if err != nil || len(placeholder) != len(with) || !bytes.Contains(b, []byte(placeholder)) {
				panic("raw request: placeholder not found")
			}
			return bytes.Replace(b, []byte(placeholder), []byte(with), 1)
		}
	}
	signatureStage := []hookverifyv1.RejectReason{
		hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_SIGNATURE,
		hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH,
		hookverifyv1.RejectReason_REJECT_REASON_MISSING_SIGNATURE,
	}
	rejected := hookverifyv1.Verdict_VERDICT_REJECTED
	reason := func(r hookverifyv1.RejectReason) []hookverifyv1.RejectReason { return []hookverifyv1.RejectReason{r} }
	nested := func(depth int) []byte {
		return []byte(`{"id":"evt_nested","data":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
	}

	cases := []hostileCase{
		{name: "body over the endpoint limit", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := append([]byte(`{"id":"evt_big","pad":"`), bytes.Repeat([]byte("x"), 1<<20)...)
				return stripeReq(stripeSign(now(), body), body)
			}},
		{name: "body over the server ceiling", repeat: 2, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE),
			build: func(int) *hookverifyv1.VerifyRequest {
				return stripeReq("t=1,v1=00", make([]byte, 32<<20+1))
			}},
		// gRPC refuses a message above the server's receive limit before any handler runs;
		// edges never send one (the edge answers 413 above its own 32 MiB body limit).
		{name: "message over the gRPC receive limit", repeat: 2, code: codes.ResourceExhausted,
			build: func(int) *hookverifyv1.VerifyRequest {
				return stripeReq("t=1,v1=00", make([]byte, 33<<20))
			}},
		{name: "10,000 headers", repeat: 3, code: codes.InvalidArgument,
			build: func(int) *hookverifyv1.VerifyRequest {
				req := stripeReq(stripeSign(now(), []byte(`{"id":"evt_h"}`)), []byte(`{"id":"evt_h"}`))
				for i := range 10000 {
					withHeader(req, "X-H", strconv.Itoa(i))
				}
				return req
			}},
		{name: "huge header value", repeat: 3, code: codes.InvalidArgument,
			build: func(int) *hookverifyv1.VerifyRequest {
				return withHeader(stripeReq(stripeSign(now(), []byte(`{"id":"evt_h"}`)), []byte(`{"id":"evt_h"}`)), "X-Padding", strings.Repeat("p", 4<<20))
			}},
		{name: "1 MB signature header", repeat: 3, code: codes.InvalidArgument,
			build: func(int) *hookverifyv1.VerifyRequest {
				return stripeReq("t="+now()+",v1="+strings.Repeat("ab", 1<<19), []byte(`{"id":"evt_h"}`))
			}},
		{name: "signature header just under the header limit", repeat: 3, verdict: rejected, reasons: signatureStage,
			build: func(int) *hookverifyv1.VerifyRequest {
				return stripeReq("t="+now()+strings.Repeat(",v1="+strings.Repeat("ab", 32), 3500), []byte(`{"id":"evt_h"}`))
			}},
		{name: "invalid UTF-8 in a header value", repeat: 3, code: codes.InvalidArgument,
			raw: raw(stripeReq("t=1,v1=PLACEHOLDER", []byte(`{}`)), "PLACEHOLDER", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5")},
		{name: "invalid UTF-8 in the endpoint id", repeat: 3, code: codes.InvalidArgument,
			raw: raw(&hookverifyv1.VerifyRequest{EndpointId: "ENDPOINTID", Method: "POST"}, "ENDPOINTID", "\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c")},
		{name: "invalid UTF-8 in the body of a JSON provider", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := []byte("\xff\xfe{\"id\":\"evt_utf8\"}")
				return stripeReq(stripeSign(now(), body), body)
			}},
		{name: "NUL in the endpoint id", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT),
			build: func(int) *hookverifyv1.VerifyRequest {
				req := github.delivery(t, "evt-nul-endpoint")
				req.EndpointId = "hostile-github\x00"
				return req
			}},
		{name: "NUL in the signature header", repeat: 3, verdict: rejected, reasons: signatureStage,
			build: func(int) *hookverifyv1.VerifyRequest {
				body := []byte(`{"id":"evt_nul"}`)
				return stripeReq(strings.Replace(stripeSign(now(), body), ",v1=", "\x00,v1=\x00", 1), body)
			}},
		{name: "NUL in the event id", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD),
			build: func(int) *hookverifyv1.VerifyRequest { return github.delivery(t, "evt\x00nul") }},
		{name: "NUL in the URL", repeat: 3, code: codes.InvalidArgument,
			build: func(int) *hookverifyv1.VerifyRequest {
				req := github.delivery(t, "evt-nul-url")
				req.Url += "\x00"
				return req
			}},
		{name: "NUL bytes in the body and a header, signed", repeat: 3, verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED,
			build: func(n int) *hookverifyv1.VerifyRequest {
				req := github.signed(t, fmt.Sprintf("evt-nul-body-%d", n), []byte("{\"a\":\"\x00\x00\"}\x00"), time.Now())
				return withHeader(req, "X-Trace", "a\x00b")
			}},
		{name: "event id over 512 bytes", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD),
			build: func(int) *hookverifyv1.VerifyRequest { return github.delivery(t, strings.Repeat("e", 600)) }},
		{name: "deeply nested JSON", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := nested(100000)
				return stripeReq(stripeSign(now(), body), body)
			}},
		{name: "non-JSON body for a JSON provider", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := []byte("id=evt_form&object=event")
				return stripeReq(stripeSign(now(), body), body)
			}},
		{name: "timestamp at the int64 maximum", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_TIMESTAMP_OUT_OF_TOLERANCE),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := []byte(`{"id":"evt_max"}`)
				return stripeReq(stripeSign("9223372036854775807", body), body)
			}},
		{name: "timestamp at the int64 minimum", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_SIGNATURE),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := []byte(`{"id":"evt_min"}`)
				return stripeReq(stripeSign("-9223372036854775808", body), body)
			}},
		{name: "timestamp beyond int64", repeat: 3, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_SIGNATURE),
			build: func(int) *hookverifyv1.VerifyRequest {
				body := []byte(`{"id":"evt_over"}`)
				return stripeReq(stripeSign("9223372036854775808", body), body)
			}},
		{name: "unknown endpoint ids", repeat: 200, verdict: rejected, reasons: reason(hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT),
			build: func(n int) *hookverifyv1.VerifyRequest {
				req := github.delivery(t, "evt-unknown")
				req.EndpointId = fmt.Sprintf("no-such-endpoint-%d-%d", time.Now().UnixNano(), n)
				return req
			}},
	}

	// The bystander delivers new events throughout; every one must be accepted.
	served := newLedger(bystander.id)
	other := p.dial()
	defer other.Close()
	ctx, stop := context.WithCancel(context.Background())
	var bystanderDone sync.WaitGroup
	for range 2 {
		bystanderDone.Add(1)
		go func() {
			defer bystanderDone.Done()
			for ctx.Err() == nil {
				a := served.verify(ctx, other, bystander, served.newID("evt"), false)
				failed := a.code != codes.OK && ctx.Err() == nil
				if failed || (a.code == codes.OK && a.verdict != hookverifyv1.Verdict_VERDICT_ACCEPTED) {
					t.Errorf("bystander: verdict %v, err %v", a.verdict, a.err)
				}
			}
		}()
	}

	burst := func(round int) {
		for _, c := range cases {
			for i := range c.repeat {
				checkHostile(t, conn, c, round*1000+i)
			}
		}
	}
	burst(0) // warms up buffers and caches
	rssBefore := rss(t, p.pid())
	for round := 1; round <= 3; round++ {
		burst(round)
		t.Logf("RSS after round %d: %d MiB", round, rss(t, p.pid())>>20)
	}
	rssAfter := rss(t, p.pid())
	accepted := served.count(hookverifyv1.Verdict_VERDICT_ACCEPTED)
	stop()
	bystanderDone.Wait()

	t.Logf("server RSS %d MiB after the first burst, %d MiB after three more; bystander: %d events accepted meanwhile",
		rssBefore>>20, rssAfter>>20, accepted)
	// Loose on purpose: the Go runtime returns memory lazily; what must not happen is growth
	// with every burst, or a footprint far beyond the largest message.
	if rssAfter > rssBefore+256<<20 || rssAfter > 1<<30 {
		t.Errorf("server memory grew from %d MiB to %d MiB over three bursts", rssBefore>>20, rssAfter>>20)
	}
	if accepted < 10 {
		t.Errorf("only %d bystander events were accepted during the hostile bursts", accepted)
	}
	if !p.alive() {
		t.Fatal("the server died")
	}
}

// checkHostile sends one hostile request and checks its answer.
func checkHostile(t *testing.T, conn *client.Conn, c hostileCase, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var resp *hookverifyv1.VerifyResponse
	var err error
	big := grpc.MaxCallSendMsgSize(64 << 20)
	if c.raw != nil {
		resp = &hookverifyv1.VerifyResponse{}
		err = conn.GRPC().Invoke(ctx, hookverifyv1.VerifierService_Verify_FullMethodName, rawMessage(c.raw()), resp, grpc.ForceCodec(rawCodec{}), big)
	} else {
		resp, err = conn.Verifier.Verify(ctx, c.build(n), big)
	}
	if c.code != codes.OK {
		if status.Code(err) != c.code {
			t.Errorf("%s: got %v (verdict %v %v), want code %v", c.name, err, resp.GetVerdict(), resp.GetRejectReason(), c.code)
		}
		return
	}
	switch {
	case err != nil:
		t.Errorf("%s: %v, want verdict %v", c.name, err, c.verdict)
	case resp.GetVerdict() != c.verdict:
		t.Errorf("%s: verdict %v (%v: %s), want %v", c.name, resp.GetVerdict(), resp.GetRejectReason(), resp.GetDetail(), c.verdict)
	case c.reasons != nil && !slices.Contains(c.reasons, resp.GetRejectReason()):
		t.Errorf("%s: reason %v (%s), want one of %v", c.name, resp.GetRejectReason(), resp.GetDetail(), c.reasons)
	}
}

// rawMessage is a request already encoded, sent through rawCodec as it is.
type rawMessage []byte

// rawCodec sends rawMessage bytes unchanged and decodes answers as protobuf; it lets a test
// send what a buggy non-Go edge could, such as invalid UTF-8 in a string field.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if r, ok := v.(rawMessage); ok {
		return r, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (rawCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }

func (rawCodec) Name() string { return "proto" }

// rss returns the resident set size of the process, from /proc.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's memory use: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}
