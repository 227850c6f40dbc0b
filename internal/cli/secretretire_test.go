package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestSecretRetireWarnsWhenNoSecretIsLeft: retiring the last secret in force leaves the
// endpoint answering every delivery UNAVAILABLE until one is added; the command said nothing
// of it. It now warns on standard error, and only then: retiring the old secret of a rotation
// is silent.
func TestSecretRetireWarnsWhenNoSecretIsLeft(t *testing.T) {
	remote, must := startTestServer(t)
	must("", "endpoint", "create", "--id", "gh", "--provider", "github")
	secretID := func(out string) string {
		var added struct {
			Secret struct {
				ID string `json:"id"`
			} `json:"secret"`
		}
		if err := json.Unmarshal([]byte(out), &added); err != nil || added.Secret.ID == "" {
			t.Fatalf("secret add printed %s (%v)", out, err)
		}
		return added.Secret.ID
	}
	old := secretID(must("first-secret", "secret", "add", "--endpoint", "gh"))
	current := secretID(must("second-secret", "secret", "add", "--endpoint", "gh"))
	retire := func(id string) string {
		t.Helper()
		code, _, errOut := run(t, "", append([]string{"secret", "retire", "--endpoint", "gh", "--id", id}, remote...)...)
		if code != 0 {
			t.Fatalf("secret retire exited %d: %s", code, errOut)
		}
		return errOut
	}
	if errOut := retire(old); strings.Contains(errOut, "warning") {
		t.Errorf("retiring one of two secrets warned: %q", errOut)
	}
	if errOut := retire(current); !strings.Contains(errOut, "no secret in force") || !strings.Contains(errOut, "UNAVAILABLE") {
		t.Errorf("retiring the last secret in force said %q; want a warning that deliveries are answered UNAVAILABLE", errOut)
	}
}

// usedSecretAdmin answers RetireSecret with the secret retired now and last used lastUsed
// before (never, when zero), by a server clock skew ahead of this machine's, and lists one
// secret still in force.
type usedSecretAdmin struct {
	hookverifyv1.UnimplementedAdminServiceServer
	lastUsed, skew time.Duration
	// listed is the state of the one secret ListSecrets lists (ACTIVE when unset).
	listed hookverifyv1.SecretState
}

func (a *usedSecretAdmin) RetireSecret(_ context.Context, req *hookverifyv1.RetireSecretRequest) (*hookverifyv1.RetireSecretResponse, error) {
	now := time.Now().Add(a.skew)
	info := &hookverifyv1.SecretInfo{Id: req.GetSecretId(), EndpointId: req.GetEndpointId(), State: hookverifyv1.SecretState_SECRET_STATE_RETIRED,
		RetireTime: timestamppb.New(now)}
	if a.lastUsed != 0 {
		info.LastUsedTime = timestamppb.New(now.Add(-a.lastUsed))
	}
	return &hookverifyv1.RetireSecretResponse{Secret: info}, nil
}

func (a *usedSecretAdmin) ListSecrets(context.Context, *hookverifyv1.ListSecretsRequest) (*hookverifyv1.ListSecretsResponse, error) {
	state := a.listed
	if state == hookverifyv1.SecretState_SECRET_STATE_UNSPECIFIED {
		state = hookverifyv1.SecretState_SECRET_STATE_ACTIVE
	}
	return &hookverifyv1.ListSecretsResponse{Secrets: []*hookverifyv1.SecretInfo{{Id: "sec_new", State: state}}}, nil
}

// TestSecretRetireCountsAnExpiringSecretAsInForce: a secret in its rotation overlap (EXPIRING)
// still authenticates, so retiring another leaves the endpoint a secret in force: no warning.
// A SCHEDULED one does not authenticate yet: the warning comes, saying it will start.
func TestSecretRetireCountsAnExpiringSecretAsInForce(t *testing.T) {
	for state, want := range map[hookverifyv1.SecretState]string{
		hookverifyv1.SecretState_SECRET_STATE_EXPIRING:  "",
		hookverifyv1.SecretState_SECRET_STATE_SCHEDULED: "a scheduled one starts",
	} {
		remote := serveFake(t, func(g *grpc.Server) {
			hookverifyv1.RegisterAdminServiceServer(g, &usedSecretAdmin{listed: state})
		})
		code, _, errOut := run(t, "", append([]string{"secret", "retire", "--endpoint", "gh", "--id", "sec_old"}, remote...)...)
		if code != 0 {
			t.Fatalf("secret retire exited %d: %s", code, errOut)
		}
		warned := strings.Contains(errOut, "no secret in force")
		if want == "" && warned || want != "" && (!warned || !strings.Contains(errOut, want)) {
			t.Errorf("retiring with the other secret %v: standard error %q; want a warning: %v (%q)", state, errOut, want != "", want)
		}
	}
}

// TestSecretRetireWarnsOfARecentUse: retiring a secret that authenticated a delivery minutes
// ago most likely cuts off a provider that still signs with it (its deliveries are now
// rejected, which many never retry); the command showed only lastUsedTime in its JSON. It now
// warns on standard error when the use was within the hour, and not for an older one. The
// hour is the server's, counted back from the retirement it reports: a machine whose clock is
// off by hours compared the server's last-use time with its own and got it wrong either way.
func TestSecretRetireWarnsOfARecentUse(t *testing.T) {
	for _, c := range []struct {
		lastUsed, skew time.Duration
		warn           bool
	}{
		{2 * time.Minute, 0, true}, {59 * time.Minute, 0, true}, {2 * time.Hour, 0, false}, {0, 0, false},
		{2 * time.Minute, -3 * time.Hour, true}, {2 * time.Hour, 3 * time.Hour, false},
	} {
		remote := serveFake(t, func(g *grpc.Server) {
			hookverifyv1.RegisterAdminServiceServer(g, &usedSecretAdmin{lastUsed: c.lastUsed, skew: c.skew})
		})
		code, _, errOut := run(t, "", append([]string{"secret", "retire", "--endpoint", "gh", "--id", "sec_old"}, remote...)...)
		if code != 0 {
			t.Fatalf("secret retire exited %d: %s", code, errOut)
		}
		if warned := strings.Contains(errOut, "sec_old authenticated a delivery"); warned != c.warn {
			t.Errorf("secret last used %v before its retirement, server clock %v off: standard error %q; want a warning: %v", c.lastUsed, c.skew, errOut, c.warn)
		}
	}
}

// addSecretRecorder records the AddSecret request it is sent.
type addSecretRecorder struct {
	hookverifyv1.UnimplementedAdminServiceServer
	got chan *hookverifyv1.AddSecretRequest
}

func (a *addSecretRecorder) AddSecret(_ context.Context, req *hookverifyv1.AddSecretRequest) (*hookverifyv1.AddSecretResponse, error) {
	a.got <- req
	return &hookverifyv1.AddSecretResponse{Secret: &hookverifyv1.SecretInfo{Id: "sec_1", EndpointId: req.GetEndpointId()}}, nil
}

// TestSecretAddSendsItsValidityTimesAsGiven: --not-before and --not-after reach the server to
// the second (and below) as written, in UTC whatever their offset: an overlap window planned
// to the minute must not start or end elsewhere.
func TestSecretAddSendsItsValidityTimesAsGiven(t *testing.T) {
	rec := &addSecretRecorder{got: make(chan *hookverifyv1.AddSecretRequest, 1)}
	remote := serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterAdminServiceServer(g, rec) })
	code, _, errOut := run(t, "whsec_new", append([]string{"secret", "add", "--endpoint", "gh",
		"--not-before", "2026-12-31T23:59:30.25Z", "--not-after", "2027-01-01T01:02:03+01:00"}, remote...)...)
	if code != 0 {
		t.Fatalf("secret add exited %d: %s", code, errOut)
	}
	req := <-rec.got
	if got, want := req.GetNotBefore().AsTime(), time.Date(2026, 12, 31, 23, 59, 30, 250_000_000, time.UTC); !got.Equal(want) {
		t.Errorf("not_before sent %v, want %v", got, want)
	}
	if got, want := req.GetNotAfter().AsTime(), time.Date(2027, 1, 1, 0, 2, 3, 0, time.UTC); !got.Equal(want) {
		t.Errorf("not_after sent %v, want %v", got, want)
	}
}
