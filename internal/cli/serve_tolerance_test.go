package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/storage"
)

// TestServeWarnsOfEndpointsWhoseToleranceOutlastsHalfTheWindow: serve warned only of a
// --dedupe-window under 72h, so a window of 72h with an endpoint of a 7-day tolerance (the
// most it may have) started in silence, though a replay of its deliveries arriving after the
// claim is swept is ACCEPTED again. At start, serve names each such endpoint it stores.
func TestServeWarnsOfEndpointsWhoseToleranceOutlastsHalfTheWindow(t *testing.T) {
	dir := t.TempDir()
	cfg := storeConfig{dataDir: dir}
	st, err := cfg.openStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []storage.Endpoint{
		{ID: "stripe-week", Provider: "stripe", TimestampTolerance: 7 * 24 * time.Hour},
		{ID: "slack-two-days", Provider: "slack", TimestampTolerance: 48 * time.Hour},
		{ID: "stripe-default", Provider: "stripe", TimestampTolerance: 5 * time.Minute},
		{ID: "github-week", Provider: "github", TimestampTolerance: 7 * 24 * time.Hour},
		{ID: "generic-option", Provider: "generic-hmac", TimestampTolerance: time.Minute,
			Options: map[string]string{"template": "{timestamp}.{body}", "timestamp_header": "X-Ts", "tolerance": "100h"}},
	} {
		ep.MaxBodyBytes, ep.DedupeScope = 1<<20, ep.ID
		if ep.Options == nil {
			ep.Options = map[string]string{}
		}
		if err := st.CreateEndpoint(t.Context(), ep); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr},
			[]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--dedupe-window", "72h"})
	}()
	want := []string{"stripe-week", "slack-two-days", "generic-option"}
	var warned map[string]int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		warned = map[string]int{}
		for line := range strings.Lines(stderr.String()) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["level"] != "WARN" || rec["dedupe_window"] == nil {
				continue
			}
			if id, ok := rec["endpoint"].(string); ok {
				warned[id]++
			}
		}
		if len(warned) >= len(want) {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	for _, id := range want {
		if warned[id] != 1 {
			t.Errorf("endpoint %s: %d warnings at start, want 1", id, warned[id])
		}
	}
	for _, id := range []string{"stripe-default", "github-week"} {
		if warned[id] != 0 {
			t.Errorf("endpoint %s: %d warnings at start, want none", id, warned[id])
		}
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", stderr.String())
	}
}
