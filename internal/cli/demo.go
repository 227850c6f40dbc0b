package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/ascii"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
)

// demo plays hookverify's story against a real embedded server over real gRPC calls.
type demo struct {
	e     env
	conn  *client.Conn
	table *tabwriter.Writer
	fails int
	// keys holds each step's operation key, by step name.
	keys map[string]string
}

func runDemo(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "demo")
	keep := fs.Bool("keep", false, "keep the temporary data directory and print its path")
	logLevel := fs.String("log-level", "error", "server log level (debug shows every call)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(e.stderr, *logLevel)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hookverify-demo-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(e.stdout, "data directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	key, err := secretbox.NewKey()
	if err != nil {
		return err
	}
	keyring, err := secretbox.NewKeyring(key)
	if err != nil {
		return err
	}
	cfg := storeConfig{dataDir: dir}
	start := func() (*runningServer, *client.Conn, error) {
		r, err := startServer(ctx, log, "127.0.0.1:0", keyring, cfg.openStore)
		if err != nil {
			return nil, nil, err
		}
		if err := r.waitReady(ctx); err != nil {
			r.stop()
			return nil, nil, err
		}
		conn, err := client.Dial(r.addr)
		if err != nil {
			r.stop()
			return nil, nil, err
		}
		return r, conn, nil
	}
	srv, conn, err := start()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "hookverify demo: embedded server on %s, data in %s\n\n", srv.addr, dir)
	d := &demo{e: e, conn: conn, table: tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(d.table, "CASE\tVERDICT\tREASON\tHTTP\tOPERATION KEY\tSECRET")

	restart := func() error {
		conn.Close()
		srv.stop()
		d.note("server stopped and restarted on the same data directory")
		srv, conn, err = start()
		if err != nil {
			return err
		}
		d.conn = conn
		return nil
	}
	err = d.play(ctx, restart)
	d.table.Flush()
	if err == nil {
		err = d.workers(ctx)
	}
	if err == nil {
		err = d.everyProvider(ctx)
	}
	conn.Close()
	srv.stop()
	if err != nil {
		return err
	}
	if d.fails > 0 {
		return fmt.Errorf("%d cases did not get the expected verdict", d.fails)
	}
	fmt.Fprintln(e.stdout, "\nEvery case got the expected verdict.")
	return nil
}

// Demo secrets: obviously fake, only ever used inside this throwaway server.
const (
	demoStripeSecret    = "whsec_demo_stripe_secret_0001"
	demoStripeSecretNew = "whsec_demo_stripe_secret_0002"
	demoGitHubSecret    = "demo github secret"
	demoStandardSecret  = "whsec_ZGVtbyBzdGFuZGFyZCB3ZWJob29rcyBzZWNyZXQ="
)

// demoStep is one delivery of the story and the verdict it must get.
type demoStep struct {
	name     string
	endpoint string
	provider string
	body     []byte
	id       string
	at       time.Time
	secrets  []string
	// mutate alters the signed delivery in flight (a tamperer, a forger).
	mutate func(body []byte, headers protocol.Headers) []byte
	want   hookverifyv1.Verdict
	// sameKeyAs names an earlier step whose operation key this one must repeat.
	sameKeyAs string
}

func (d *demo) play(ctx context.Context, restart func() error) error {
	admin := d.conn.Admin
	for _, ep := range []struct{ id, provider, secret string }{
		{"shop-stripe", "stripe", demoStripeSecret},
		{"ci-github", "github", demoGitHubSecret},
		{"app-standard", "standard-webhooks", demoStandardSecret},
	} {
		if _, err := admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: ep.id, Provider: ep.provider}}); err != nil {
			return fmt.Errorf("creating endpoint %s: %w", ep.id, err)
		}
		if _, err := admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: ep.id, Secret: ep.secret}); err != nil {
			return fmt.Errorf("adding a secret to %s: %w", ep.id, err)
		}
	}
	now := time.Now()
	accepted, duplicate, rejected := hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE, hookverifyv1.Verdict_VERDICT_REJECTED
	stripe := func(name, eventID string, at time.Time, want hookverifyv1.Verdict, secrets ...string) demoStep {
		return demoStep{name: name, endpoint: "shop-stripe", provider: "stripe", at: at, secrets: secrets, want: want,
			body: []byte(`{"id":"` + eventID + `","object":"event","type":"payment_intent.succeeded"}`)}
	}
	appendSpace := func(body []byte, _ protocol.Headers) []byte { return append(body, ' ') }
	changeID := func(body []byte, h protocol.Headers) []byte {
		for i := range h {
			if ascii.EqualFold(h[i].Name, "webhook-id") {
				h[i].Value += "x"
			}
		}
		return body
	}
	first := stripe("stripe: signed delivery", "evt_demo_1", now, accepted, demoStripeSecret)
	redelivery := stripe("stripe: redelivery, signed afresh", "evt_demo_1", now.Add(time.Minute), duplicate, demoStripeSecret)
	redelivery.sameKeyAs = first.name
	tampered := stripe("stripe: body tampered by one byte", "evt_demo_1", now, rejected, demoStripeSecret)
	tampered.mutate = appendSpace
	github := demoStep{name: "github: signed delivery", endpoint: "ci-github", provider: "github", body: []byte(`{"zen":"Design for failure."}`),
		id: "72d3162e-cc78-11e3-81ab-4c9367dc0958", at: now, secrets: []string{demoGitHubSecret}, want: accepted}
	githubAgain := github
	githubAgain.name, githubAgain.want, githubAgain.sameKeyAs = "github: manual redelivery", duplicate, github.name
	standard := demoStep{name: "standard-webhooks: signed delivery", endpoint: "app-standard", provider: "standard-webhooks",
		body: []byte(`{"type":"user.created"}`), id: "msg_demo_1", at: now, secrets: []string{demoStandardSecret}, want: accepted}
	standardForged := standard
	standardForged.name, standardForged.want, standardForged.mutate = "standard-webhooks: id changed in flight", rejected, changeID

	if err := d.steps(ctx,
		first, redelivery,
		stripe("stripe: forged copy (wrong secret)", "evt_demo_1", now, rejected, "whsec_attacker_guess"),
		tampered,
		stripe("stripe: stale timestamp (10 min old)", "evt_demo_2", now.Add(-10*time.Minute), rejected, demoStripeSecret),
		stripe("stripe: future timestamp (+10 min)", "evt_demo_3", now.Add(10*time.Minute), rejected, demoStripeSecret),
		github, githubAgain, standard, standardForged,
	); err != nil {
		return err
	}

	rot, err := admin.RotateSecret(ctx, &hookverifyv1.RotateSecretRequest{EndpointId: "shop-stripe", Secret: demoStripeSecretNew, Overlap: durationpb.New(time.Hour)})
	if err != nil {
		return fmt.Errorf("rotating: %w", err)
	}
	d.note("rotated shop-stripe to %s; the old secret stays valid for 1h", rot.GetSecret().GetId())
	if err := d.steps(ctx,
		stripe("rotation overlap: old secret", "evt_demo_4", now, accepted, demoStripeSecret),
		stripe("rotation overlap: new secret", "evt_demo_5", now, accepted, demoStripeSecretNew),
		stripe("rotation overlap: both, as Stripe sends", "evt_demo_6", now, accepted, demoStripeSecret, demoStripeSecretNew),
	); err != nil {
		return err
	}
	for _, prev := range rot.GetPrevious() {
		if _, err := admin.RetireSecret(ctx, &hookverifyv1.RetireSecretRequest{EndpointId: "shop-stripe", SecretId: prev.GetId()}); err != nil {
			return fmt.Errorf("retiring: %w", err)
		}
		d.note("retired the old secret %s", prev.GetId())
	}
	if err := d.steps(ctx, stripe("retired secret", "evt_demo_7", now, rejected, demoStripeSecret)); err != nil {
		return err
	}
	if err := restart(); err != nil {
		return err
	}
	afterRestart := stripe("stripe: redelivery after restart", "evt_demo_1", time.Now(), duplicate, demoStripeSecretNew)
	afterRestart.sameKeyAs = first.name
	return d.steps(ctx, afterRestart)
}

func (d *demo) note(format string, args ...any) {
	fmt.Fprintf(d.table, "-- "+format+" --\n", args...)
}

func (d *demo) steps(ctx context.Context, steps ...demoStep) error {
	for _, s := range steps {
		if err := d.deliver(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// deliver signs the step's delivery as the provider would, sends it and prints the answer.
func (d *demo) deliver(ctx context.Context, s demoStep) error {
	p, ok := protocol.Default().Lookup(s.provider)
	if !ok {
		return fmt.Errorf("provider %s not registered", s.provider)
	}
	url := "https://hooks.example.com/" + s.endpoint
	signed, err := protocol.SignDelivery(p, protocol.SignInput{Body: s.body, EventID: s.id, Timestamp: s.at, Method: "POST", URL: url}, s.secrets)
	if err != nil {
		return fmt.Errorf("%s: signing: %w", s.name, err)
	}
	body, headers := signed.Body, signed.Headers
	if s.mutate != nil {
		body = s.mutate(append([]byte(nil), body...), headers)
	}
	req := &hookverifyv1.VerifyRequest{EndpointId: s.endpoint, Body: body, Method: "POST", Url: signed.URL}
	for _, h := range headers {
		req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
	}
	resp, err := d.conn.Verifier.Verify(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	reason := ""
	if resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED {
		reason = strings.TrimPrefix(resp.GetRejectReason().String(), "REJECT_REASON_")
	}
	var problems []string
	if resp.GetVerdict() != s.want {
		problems = append(problems, "expected "+strings.TrimPrefix(s.want.String(), "VERDICT_"))
	}
	if s.sameKeyAs != "" && resp.GetOperationKey() != d.keys[s.sameKeyAs] {
		problems = append(problems, "operation key differs from "+s.sameKeyAs)
	}
	mark := ""
	if len(problems) > 0 {
		d.fails++
		mark = "  <-- " + strings.Join(problems, "; ")
	}
	if d.keys == nil {
		d.keys = map[string]string{}
	}
	d.keys[s.name] = resp.GetOperationKey()
	fmt.Fprintf(d.table, "%s\t%s\t%s\t%d\t%s\t%s%s\n", s.name, strings.TrimPrefix(resp.GetVerdict().String(), "VERDICT_"),
		reason, resp.GetReply().GetStatus(), resp.GetOperationKey(), resp.GetSecretId(), mark)
	return nil
}

// everyProvider runs each registered protocol through the same three deliveries: signed
// (ACCEPTED), the same again (DUPLICATE, or ACCEPTED where every delivery is new) and, where the protocol signs the body, the body changed
// by one byte (REJECTED). Signing uses each protocol's own Sign with a fresh example secret.
func (d *demo) everyProvider(ctx context.Context) error {
	fmt.Fprintln(d.e.stdout, "\nEvery provider, signed with its own scheme:")
	table := tabwriter.NewWriter(d.e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "PROVIDER\tSIGNED\tAGAIN\tBODY CHANGED\tOPERATION KEY")
	defer table.Flush()
	for _, p := range protocol.Default().All() {
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			return fmt.Errorf("%s: example secret: %w", p.Name, err)
		}
		id := "every-" + p.Name
		if _, err := d.conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: p.Name}}); err != nil {
			return fmt.Errorf("creating endpoint %s: %w", id, err)
		}
		if _, err := d.conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: id, Secret: verifying}); err != nil {
			return fmt.Errorf("adding a secret to %s: %w", id, err)
		}
		eventID := "evt_every_" + strings.ReplaceAll(p.Name, "-", "_")
		url := "https://hooks.example.com/" + id
		signed, err := protocol.SignDelivery(p, protocol.SignInput{Body: protocol.ExampleBody(p, eventID), EventID: eventID, Timestamp: time.Now(), Method: "POST", URL: url}, []string{signing})
		if err != nil {
			return fmt.Errorf("%s: signing: %w", p.Name, err)
		}
		send := func(body []byte) (*hookverifyv1.VerifyResponse, error) {
			req := &hookverifyv1.VerifyRequest{EndpointId: id, Body: body, Method: "POST", Url: signed.URL}
			for _, h := range signed.Headers {
				req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
			}
			return d.conn.Verifier.Verify(ctx, req)
		}
		verdicts := make([]string, 0, 3)
		expect := []hookverifyv1.Verdict{hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE, hookverifyv1.Verdict_VERDICT_REJECTED}
		if p.EveryDeliveryNew {
			expect[1] = hookverifyv1.Verdict_VERDICT_ACCEPTED // nothing tells a repeat from a new notification
		}
		bodies := [][]byte{signed.Body, signed.Body, append(append([]byte(nil), signed.Body...), ' ')}
		key := ""
		for i, body := range bodies {
			if i == 2 && p.StaticCredential {
				verdicts = append(verdicts, "(body not signed)")
				continue
			}
			resp, err := send(body)
			if err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			v := strings.TrimPrefix(resp.GetVerdict().String(), "VERDICT_")
			if resp.GetVerdict() != expect[i] {
				v += " <-- expected " + strings.TrimPrefix(expect[i].String(), "VERDICT_")
				d.fails++
			}
			if i == 0 {
				key = resp.GetOperationKey()
			}
			verdicts = append(verdicts, v)
		}
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\n", p.Name, verdicts[0], verdicts[1], verdicts[2], key)
	}
	return nil
}

// workers shows the inbox side: a worker leases a delivery and crashes, its lease expires, a
// second worker gets the same delivery (same operation key, attempt 2) and acks it, and the
// first worker's late ack is refused.
func (d *demo) workers(ctx context.Context) error {
	fmt.Fprintln(d.e.stdout, "\nWorkers and the inbox (at-least-once to workers, the operation key makes it safe):")
	inbox := hookverifyv1.NewInboxServiceClient(d.conn.GRPC())
	check := func(ok bool, format string, args ...any) {
		mark := "ok  "
		if !ok {
			mark = "FAIL"
			d.fails++
		}
		fmt.Fprintf(d.e.stdout, "  %s %s\n", mark, fmt.Sprintf(format, args...))
	}
	filter := []string{"shop-stripe"}
	a, err := inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: filter, MaxDeliveries: 1, VisibilityTimeout: durationpb.New(time.Second)})
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if len(a.GetDeliveries()) != 1 {
		return fmt.Errorf("worker A leased %d deliveries, want 1", len(a.GetDeliveries()))
	}
	da := a.GetDeliveries()[0]
	check(da.GetAttempts() == 1, "worker A leases event %s (attempt %d, operation key %s) for 1s, then crashes", da.GetEventId(), da.GetAttempts(), da.GetOperationKey())
	time.Sleep(1200 * time.Millisecond)
	b, err := inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: filter, MaxDeliveries: 1, VisibilityTimeout: durationpb.New(time.Minute)})
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if len(b.GetDeliveries()) != 1 {
		return fmt.Errorf("worker B leased %d deliveries, want 1", len(b.GetDeliveries()))
	}
	db := b.GetDeliveries()[0]
	check(db.GetInboxId() == da.GetInboxId() && db.GetAttempts() == 2 && db.GetOperationKey() == da.GetOperationKey(),
		"the lease expires; worker B gets the same delivery (attempt %d, same operation key)", db.GetAttempts())
	_, err = inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: db.GetInboxId(), LeaseToken: db.GetLeaseToken()})
	check(err == nil, "worker B does the work with the operation key as its idempotency key, and acks")
	_, err = inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: da.GetInboxId(), LeaseToken: da.GetLeaseToken()})
	check(status.Code(err) == codes.FailedPrecondition, "worker A comes back and acks late: refused (%s), the lease was lost", status.Code(err))
	stats, err := inbox.GetInboxStats(ctx, &hookverifyv1.GetInboxStatsRequest{})
	if err != nil {
		return fmt.Errorf("inbox stats: %w", err)
	}
	for _, e := range stats.GetEndpoints() {
		fmt.Fprintf(d.e.stdout, "  inbox %-14s pending %d, leased %d, dead %d\n", e.GetEndpointId(), e.GetPending(), e.GetLeased(), e.GetDead())
	}
	return nil
}
