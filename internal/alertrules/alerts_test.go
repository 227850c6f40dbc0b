package alertrules

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"gopkg.in/yaml.v3"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// rulesPath and tableIntro locate the rule file and README's alert table, from the module root.
const (
	rulesPath  = "examples/prometheus/alerts.yml"
	tableIntro = "Delivery health and business completion are different things; alert on both:"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// tableRow is one row of README's alert table: what to alert on and the metrics it names.
type tableRow struct {
	what     string
	metrics  []string // base metric names, in the order the row names them
	matchers []string // metric{label="value"} the row names
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// promConstructors maps the client_golang constructors to the kind of metric they declare.
var promConstructors = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter", "NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram", "NewSummary": "summary", "NewSummaryVec": "summary",
	"NewCounterFunc": "counter", "NewGaugeFunc": "gauge",
}

// declaredMetrics reads every metric the module's non-test Go files declare with a
// prometheus.New... (or promauto.New...) call: its name, kind and label names.
func declaredMetrics(t *testing.T, root string) map[string]metricDecl {
	t.Helper()
	decls := map[string]metricDecl{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(src, []byte(`"hookverify_`)) {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || (pkg.Name != "prometheus" && pkg.Name != "promauto") || promConstructors[sel.Sel.Name] == "" {
				return true
			}
			opts, ok := call.Args[0].(*ast.CompositeLit)
			if !ok {
				t.Errorf("%s: %s's options are no literal", fset.Position(call.Pos()), sel.Sel.Name)
				return true
			}
			name := ""
			for _, e := range opts.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				lit, isLit := kv.Value.(*ast.BasicLit)
				switch {
				case key == nil:
				case key.Name == "Namespace" || key.Name == "Subsystem" || key.Name == "ConstLabels":
					t.Errorf("%s: %s is not read by this test; extend it", fset.Position(kv.Pos()), key.Name)
				case key.Name == "Name" && isLit && lit.Kind == token.STRING:
					name, _ = strconv.Unquote(lit.Value)
				case key.Name == "Name":
					t.Errorf("%s: metric name is no string literal", fset.Position(kv.Pos()))
				}
			}
			if name == "" {
				return true
			}
			decl := metricDecl{kind: promConstructors[sel.Sel.Name]}
			if strings.HasSuffix(sel.Sel.Name, "Vec") {
				labels, ok := call.Args[1].(*ast.CompositeLit)
				if !ok {
					t.Errorf("%s: labels of %s are no literal", fset.Position(call.Pos()), name)
					return true
				}
				for _, e := range labels.Elts {
					lit, ok := e.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: a label of %s is no string literal", fset.Position(e.Pos()), name)
						continue
					}
					l, _ := strconv.Unquote(lit.Value)
					decl.labels = append(decl.labels, l)
				}
			}
			if prev, dup := decls[name]; dup && (prev.kind != decl.kind || !slices.Equal(prev.labels, decl.labels)) {
				t.Errorf("metric %s is declared twice, differently", name)
			}
			decls[name] = decl
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(decls) == 0 {
		t.Fatal("no hookverify metric declarations found")
	}
	return decls
}

// labelValues are the values the code gives the labels whose values are fixed, read from the
// code itself so that a renamed value shows here.
func labelValues() map[string][]string {
	enum := func(names map[int32]string, prefix string) []string {
		var out []string
		for _, n := range names {
			out = append(out, strings.ToLower(strings.TrimPrefix(n, prefix)))
		}
		slices.Sort(out)
		return out
	}
	var grpcCodes []string
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		grpcCodes = append(grpcCodes, c.String())
	}
	return map[string][]string{
		"verdict": enum(hookverifyv1.Verdict_name, "VERDICT_"),
		"reason":  append(enum(hookverifyv1.RejectReason_name, "REJECT_REASON_"), ""),
		"code":    grpcCodes,
	}
}

var (
	metricNameRE = regexp.MustCompile(`hookverify_[a-z0-9_]+`)
	matcherRE    = regexp.MustCompile(`(hookverify_[a-z0-9_]+)\{([a-z_]+)="([^"]*)"\}`)
	templateRE   = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)`)
)

// readmeTable reads the rows of README's alert table.
func readmeTable(t *testing.T, root string, decls map[string]metricDecl) []tableRow {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), tableIntro)
	if !ok {
		t.Fatalf("README.md has no line %q", tableIntro)
	}
	c := &checker{decls: decls}
	var rows []tableRow
	lines := strings.Split(strings.TrimLeft(after, "\n"), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i < 2 { // header and separator
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 5 {
			t.Errorf("README alert table row %q: want 3 cells", line)
			continue
		}
		row := tableRow{what: strings.TrimSpace(cells[1])}
		for _, name := range metricNameRE.FindAllString(cells[2], -1) {
			base, _, ok := c.baseMetric(name)
			if !ok {
				t.Errorf("README alert table row %q names %s, which the code does not declare", row.what, name)
				continue
			}
			if !slices.Contains(row.metrics, base) {
				row.metrics = append(row.metrics, base)
			}
		}
		for _, m := range matcherRE.FindAllStringSubmatch(cells[2], -1) {
			row.matchers = append(row.matchers, m[1]+"\x00"+m[2]+"="+strconv.Quote(m[3]))
		}
		if len(row.metrics) == 0 {
			t.Errorf("README alert table row %q names no metric", row.what)
			continue
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatal("README's alert table has no rows")
	}
	return rows
}

func loadRules(t *testing.T, root string) ruleFile {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true) // a misspelt key ("annotation") would be dropped silently by Prometheus' users
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	return rf
}

// checkRules returns every fault of rf against the declared metrics and README's table rows.
func checkRules(rf ruleFile, decls map[string]metricDecl, values map[string][]string, rows []tableRow) []string {
	var faults []string
	fault := func(format string, args ...any) { faults = append(faults, fmt.Sprintf(format, args...)) }
	type checked struct {
		rule     rule
		metrics  []string // base names the expression selects
		mentions string   // expression and annotations, for the metrics a row names beside it
		matchers map[string][]string
	}
	var alerts []checked
	groups, names := map[string]bool{}, map[string]bool{}
	if len(rf.Groups) == 0 {
		fault("no rule groups")
	}
	for _, g := range rf.Groups {
		if g.Name == "" || groups[g.Name] {
			fault("group name %q is empty or repeated", g.Name)
		}
		groups[g.Name] = true
		for _, r := range g.Rules {
			where := fmt.Sprintf("alert %q", r.Alert)
			if r.Alert == "" || names[r.Alert] {
				fault("%s: alert name empty or repeated", where)
			}
			names[r.Alert] = true
			if !durationRE.MatchString(r.For) {
				fault("%s: for %q is no Prometheus duration", where, r.For)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
				fault("%s: severity %q, want critical, warning or info", where, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					fault("%s: no %s annotation", where, a)
				}
			}
			if !strings.Contains(r.Annotations["description"], "threshold") {
				fault("%s: the description does not name its threshold", where)
			}
			v, c := checkExpr(r.Expr, decls, values)
			for _, e := range c.errs {
				fault("%s: %s", where, e)
			}
			for _, a := range []string{"summary", "description"} {
				for _, m := range templateRE.FindAllStringSubmatch(r.Annotations[a], -1) {
					if !v.labels[m[1]] {
						fault("%s: %s uses $labels.%s, which the expression's result does not carry", where, a, m[1])
					}
				}
			}
			ch := checked{rule: r, matchers: c.matchers, mentions: r.Expr + "\n" + r.Annotations["summary"] + "\n" + r.Annotations["description"]}
			for _, name := range v.metrics {
				if base, _, ok := c.baseMetric(name); ok && !slices.Contains(ch.metrics, base) {
					ch.metrics = append(ch.metrics, base)
				}
			}
			alerts = append(alerts, ch)
		}
	}
	// Each table row maps to the one alert whose expression selects the first metric it names:
	// first of all (an alert may read another row's metric beside its own, as the oldest-age
	// alert reads the stats timestamp to set stale instances aside), else anywhere.
	mapped := map[string]string{}
	for _, row := range rows {
		var found []checked
		for _, a := range alerts {
			if len(a.metrics) > 0 && a.metrics[0] == row.metrics[0] {
				found = append(found, a)
			}
		}
		if len(found) == 0 {
			for _, a := range alerts {
				if slices.Contains(a.metrics, row.metrics[0]) {
					found = append(found, a)
				}
			}
		}
		if len(found) != 1 {
			fault("README alert %q (%s): %d alerts select it, want 1", row.what, row.metrics[0], len(found))
			continue
		}
		a := found[0]
		if prev, dup := mapped[a.rule.Alert]; dup {
			fault("alert %q serves both README rows %q and %q", a.rule.Alert, prev, row.what)
		}
		mapped[a.rule.Alert] = row.what
		for _, m := range row.metrics[1:] {
			if !mentions(a.mentions, m) {
				fault("alert %q: README row %q names %s, which the alert neither selects nor mentions", a.rule.Alert, row.what, m)
			}
		}
		for _, m := range row.matchers {
			metric, matcher, _ := strings.Cut(m, "\x00")
			if !slices.Contains(a.matchers[metric], matcher) {
				fault("alert %q: README row %q selects %s{%s}, the alert does not", a.rule.Alert, row.what, metric, matcher)
			}
		}
	}
	for _, a := range alerts {
		if _, ok := mapped[a.rule.Alert]; !ok {
			fault("alert %q has no row in README's alert table", a.rule.Alert)
		}
	}
	return faults
}

// mentions reports whether text names metric, or a series of it (_bucket, _sum, _count).
func mentions(text, metric string) bool {
	for _, name := range metricNameRE.FindAllString(text, -1) {
		if name == metric || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count") == metric {
			return true
		}
	}
	return false
}

// TestAlertRules checks examples/prometheus/alerts.yml: well formed, its expressions correct
// for the metrics the code declares (names, kinds, labels, label values), and one alert for each
// row of README's alert table.
func TestAlertRules(t *testing.T) {
	root := moduleRoot(t)
	decls := declaredMetrics(t, root)
	rows := readmeTable(t, root, decls)
	for _, f := range checkRules(loadRules(t, root), decls, labelValues(), rows) {
		t.Error(f)
	}
}

// TestAlertRulesPromtool checks the rule file with Prometheus' own promtool where one is on
// PATH (Debian's prometheus package has it): the checks above are only a subset of PromQL.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH")
	}
	out, err := exec.Command(promtool, "check", "rules", "--lint=all", "--lint-fatal", filepath.Join(moduleRoot(t), rulesPath)).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestAlertRulesFailOnRename checks that the check fails when the code renames a metric or a
// label, or README's table changes, rather than passing over an alert that no longer fires.
func TestAlertRulesFailOnRename(t *testing.T) {
	root := moduleRoot(t)
	rf := loadRules(t, root)
	decls := declaredMetrics(t, root)
	rows := readmeTable(t, root, decls)
	rename := func(from, to string) map[string]metricDecl {
		out := map[string]metricDecl{}
		for name, d := range decls {
			if name == from {
				name = to
			}
			out[name] = d
		}
		return out
	}
	relabel := func(metric, from, to string) map[string]metricDecl {
		out := rename("", "")
		d := out[metric]
		d.labels = slices.Clone(d.labels)
		d.labels[slices.Index(d.labels, from)] = to
		out[metric] = d
		return out
	}
	cases := []struct {
		name   string
		decls  map[string]metricDecl
		values map[string][]string
		rows   []tableRow
	}{
		{"gauge renamed", rename("hookverify_inbox_oldest_pending_age_seconds", "hookverify_inbox_oldest_age_seconds"), labelValues(), rows},
		{"histogram renamed", rename("hookverify_storage_claim_duration_seconds", "hookverify_claim_duration_seconds"), labelValues(), rows},
		{"label renamed", relabel("hookverify_verdicts_total", "reason", "reject_reason"), labelValues(), rows},
		{"grouping label renamed", relabel("hookverify_backpressure_total", "endpoint", "endpoint_id"), labelValues(), rows},
		{"code value renamed", decls, map[string][]string{"code": {"UNAVAILABLE"}}, rows},
		{"README row added", decls, labelValues(), append(slices.Clone(rows), tableRow{what: "retention", metrics: []string{"hookverify_retention_inbox_deleted_total"}})},
		{"README row removed", decls, labelValues(), rows[1:]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if faults := checkRules(rf, tc.decls, tc.values, tc.rows); len(faults) == 0 {
				t.Error("no fault found")
			} else {
				t.Log(faults)
			}
		})
	}
}

// TestCheckExpr checks the PromQL checker itself on expressions it must accept or refuse.
func TestCheckExpr(t *testing.T) {
	decls := map[string]metricDecl{
		"c_total":               {kind: "counter", labels: []string{"endpoint", "reason"}},
		"g":                     {kind: "gauge", labels: []string{"endpoint"}},
		"hookverify_inbox_dead": {kind: "gauge", labels: []string{"endpoint"}},
		"h":                     {kind: "histogram"},
	}
	values := map[string][]string{"reason": {"a", "b"}}
	good := []string{
		`sum by (endpoint) (rate(c_total[5m])) > 0`,
		`max by (endpoint) (g) > 300`,
		`time() - max(g) > 60 or absent(g)`,
		`histogram_quantile(0.99, sum by (instance, le) (rate(h_bucket[5m]))) > 2`,
		`sum by (endpoint, reason) (rate(c_total{reason="a"}[10m])) / on (endpoint) group_left sum by (endpoint) (rate(c_total[10m])) > 0.05`,
		`label_replace(max by (endpoint) (g) > 1, "stage", "x", "", "") or sum(rate(h_sum[5m])) > 0.8`,
		`-sum without (reason) (increase(c_total[1h] offset 5m)) ^ 2 ^ 1 > bool 1`,
	}
	bad := map[string]string{
		"rate of a gauge":              `rate(g[5m]) > 0`,
		"counter compared as is":       `sum(c_total) > 0`,
		"unknown metric":               `max(g_age) > 0`,
		"unknown label":                `sum by (method) (rate(c_total[5m])) > 0`,
		"unknown matcher label":        `rate(c_total{code="x"}[5m]) > 0`,
		"unknown label value":          `rate(c_total{reason="c"}[5m]) > 0`,
		"quantile without le":          `histogram_quantile(0.9, sum(rate(h_bucket[5m]))) > 1`,
		"quantile of raw buckets":      `histogram_quantile(0.9, h_bucket) > 1`,
		"never matching division":      `sum by (endpoint, reason) (rate(c_total[5m])) / sum by (endpoint) (rate(c_total[5m]))`,
		"on label missing":             `sum by (endpoint) (rate(c_total[5m])) and on (reason) max by (endpoint) (g)`,
		"many-to-one without group":    `sum by (endpoint, reason) (rate(c_total[5m])) / on (endpoint) sum by (endpoint) (rate(c_total[5m]))`,
		"unclosed paren":               `sum(rate(c_total[5m]) > 0`,
		"range not applied":            `rate(c_total) > 0`,
		"trailing garbage":             `max(g) > 0 0`,
		"bad duration":                 `rate(c_total[5x]) > 0`,
		"range vector result":          `c_total[5m]`,
		"inbox gauge summed":           `sum by (endpoint) (hookverify_inbox_dead) > 0`,
		"label_replace unknown source": `label_replace(max(g), "x", "$1", "endpoint", "(.*)")`,
	}
	for _, expr := range good {
		if _, c := checkExpr(expr, decls, values); len(c.errs) > 0 {
			t.Errorf("%s: %v", expr, c.errs)
		}
	}
	for name, expr := range bad {
		if _, c := checkExpr(expr, decls, values); len(c.errs) == 0 {
			t.Errorf("%s: %s passed", name, expr)
		}
	}
}
