package server_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// toleranceWarnings returns, per endpoint id, the log lines that warn of a tolerance longer
// than half the dedupe window.
func toleranceWarnings(t *testing.T, logs []byte) map[string][]string {
	t.Helper()
	warned := map[string][]string{}
	for line := range bytes.Lines(logs) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["level"] != "WARN" || rec["dedupe_window"] == nil {
			continue
		}
		id, _ := rec["endpoint"].(string)
		warned[id] = append(warned[id], string(line))
	}
	return warned
}

// TestToleranceOverHalfTheDedupeWindowIsWarned: a delivery verifies for up to twice its
// endpoint's tolerance, so with a tolerance over half the dedupe window a replay that comes
// after its claim is swept is ACCEPTED again. Nothing is refused, but creating or updating
// such an endpoint is logged, per endpoint, with the tolerance that applies (the generic
// HMAC's tolerance option over the endpoint's), and only where a timestamp is checked.
func TestToleranceOverHalfTheDedupeWindowIsWarned(t *testing.T) {
	e := newEnv(t, backends[0])
	e.options = func(o *server.Options) { o.DedupeWindow = 72 * time.Hour }
	in := e.start(t, e.store)
	tol := func(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
	for _, ep := range []*hookverifyv1.Endpoint{
		{Id: "stripe-over", Provider: "stripe", TimestampTolerance: tol(37 * time.Hour)},
		{Id: "stripe-half", Provider: "stripe", TimestampTolerance: tol(36 * time.Hour)},
		{Id: "stripe-default", Provider: "stripe"},
		// GitHub signs no timestamp: its tolerance is never applied.
		{Id: "github-long", Provider: "github", TimestampTolerance: tol(server.MaxTolerance)},
		// The option overrides the endpoint's tolerance, either way.
		{Id: "generic-option-over", Provider: "generic-hmac", TimestampTolerance: tol(time.Minute),
			Options: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Ts", "tolerance": "40h"}},
		{Id: "generic-option-under", Provider: "generic-hmac", TimestampTolerance: tol(server.MaxTolerance),
			Options: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Ts", "tolerance": "5m"}},
		{Id: "generic-endpoint-over", Provider: "generic-hmac", TimestampTolerance: tol(48 * time.Hour),
			Options: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Ts"}},
		// No {timestamp} in the template (a literal one is "{{timestamp}}"): none is checked.
		{Id: "generic-no-timestamp", Provider: "generic-hmac", TimestampTolerance: tol(server.MaxTolerance),
			Options: map[string]string{"template": "{{timestamp}}.{body}"}},
	} {
		in.createEndpoint(t, ep)
	}
	warned := toleranceWarnings(t, e.logs.Bytes())
	for _, id := range []string{"stripe-over", "generic-option-over", "generic-endpoint-over"} {
		if len(warned[id]) != 1 {
			t.Errorf("endpoint %s created with a tolerance over half the window: %d warnings, want 1", id, len(warned[id]))
		}
	}
	for _, id := range []string{"stripe-half", "stripe-default", "github-long", "generic-option-under", "generic-no-timestamp", ""} {
		if len(warned[id]) != 0 {
			t.Errorf("endpoint %q: warned %q, want nothing", id, warned[id])
		}
	}

	if _, err := in.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{
		Id: "stripe-half", Provider: "stripe", TimestampTolerance: tol(50 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if got := toleranceWarnings(t, e.logs.Bytes())["stripe-half"]; len(got) != 1 {
		t.Errorf("endpoint updated to a tolerance over half the window: warnings %q, want 1", got)
	}
}
