package alertrules

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// inboxStaleRuleTests are promtool rule unit tests of the two alerts on inbox gauges, with two
// instances on one database: a reads fresh, b's reads fail from some point on (it keeps its
// last gauges, ageing the oldest-pending one).
const inboxStaleRuleTests = `
rule_files: [RULES]
evaluation_interval: 1m
tests:
  # The dead letters were discarded at 2m: a reads 0 from then on; b's reads fail from 1m on,
  # so it keeps exporting 3. The alert must stop once a shows them gone.
  - interval: 1m
    input_series:
      - series: 'hookverify_inbox_dead{instance="a",endpoint="ep"}'
        values: '3 3 0 0 0 0 0 0 0 0'
      - series: 'hookverify_inbox_dead{instance="b",endpoint="ep"}'
        values: '3 3 3 3 3 3 3 3 3 3'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="a"}'
        values: '0+60x9'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="b"}'
        values: '0 60 60 60 60 60 60 60 60 60'
      - series: 'hookverify_inbox_dead_lettered_total{instance="a",cause="nack"}'
        values: '0x9'
    alert_rule_test:
      - eval_time: 1m
        alertname: HookverifyDeadLetters
        exp_alerts:
          - exp_labels: {severity: warning, endpoint: ep}
      - eval_time: 5m
        alertname: HookverifyDeadLetters
        exp_alerts: []
  # The endpoint's dead letters were discarded and its inbox emptied: a no longer exports its
  # gauges at all; b, stale, still does.
  - interval: 1m
    input_series:
      - series: 'hookverify_inbox_dead{instance="a",endpoint="ep"}'
        values: '3 3 stale'
      - series: 'hookverify_inbox_dead{instance="b",endpoint="ep"}'
        values: '3 3 3 3 3 3 3 3 3 3'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="a"}'
        values: '0+60x9'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="b"}'
        values: '0 60 60 60 60 60 60 60 60 60'
      - series: 'hookverify_inbox_dead_lettered_total{instance="a",cause="nack"}'
        values: '0x9'
    alert_rule_test:
      - eval_time: 6m
        alertname: HookverifyDeadLetters
        exp_alerts: []
  # Storage is down for every instance: nothing can be discarded, the last counts stand.
  - interval: 1m
    input_series:
      - series: 'hookverify_inbox_dead{instance="a",endpoint="ep"}'
        values: '3x9'
      - series: 'hookverify_inbox_dead{instance="b",endpoint="ep"}'
        values: '3x9'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="a"}'
        values: '0 60 60 60 60 60 60 60 60 60'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="b"}'
        values: '0 60 60 60 60 60 60 60 60 60'
      - series: 'hookverify_inbox_dead_lettered_total{instance="a",cause="nack"}'
        values: '0x9'
    alert_rule_test:
      - eval_time: 6m
        alertname: HookverifyDeadLetters
        exp_alerts:
          - exp_labels: {severity: warning, endpoint: ep}
  # Dead letters read fresh by one instance fire however stale the other is.
  - interval: 1m
    input_series:
      - series: 'hookverify_inbox_dead{instance="a",endpoint="ep"}'
        values: '0 0 2 2 2 2 2 2 2 2'
      - series: 'hookverify_inbox_dead{instance="b",endpoint="ep"}'
        values: '0 0 0 0 0 0 0 0 0 0'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="a"}'
        values: '0+60x9'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="b"}'
        values: '0 60 60 60 60 60 60 60 60 60'
      - series: 'hookverify_inbox_dead_lettered_total{instance="a",cause="nack"}'
        values: '0x9'
    alert_rule_test:
      - eval_time: 6m
        alertname: HookverifyDeadLetters
        exp_alerts:
          - exp_labels: {severity: warning, endpoint: ep}
  # The oldest-age alert, which already set stale instances aside: b's aged value does not page
  # while a reads the inbox drained.
  - interval: 1m
    input_series:
      - series: 'hookverify_inbox_oldest_pending_age_seconds{instance="a",endpoint="ep"}'
        values: '0x9'
      - series: 'hookverify_inbox_oldest_pending_age_seconds{instance="b",endpoint="ep"}'
        values: '0 100+60x8'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="a"}'
        values: '0+60x9'
      - series: 'hookverify_inbox_stats_last_success_timestamp_seconds{instance="b"}'
        values: '0 60 60 60 60 60 60 60 60 60'
    alert_rule_test:
      - eval_time: 9m
        alertname: HookverifyInboxOldestPendingAge
        exp_alerts: []
`

// TestInboxAlertsPromtool runs the rule unit tests above with promtool, where one is on PATH.
func TestInboxAlertsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH")
	}
	// promtool compares annotations too: test a copy of the rules without them.
	var rf map[string]any
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	for _, g := range rf["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			delete(r.(map[string]any), "annotations")
		}
	}
	stripped, err := yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rules, stripped, 0o600); err != nil {
		t.Fatal(err)
	}
	src := []byte(strings.ReplaceAll(inboxStaleRuleTests, "RULES", strconv.Quote(rules)))
	file := filepath.Join(dir, "tests.yml")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
