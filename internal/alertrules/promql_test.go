package alertrules

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// A small PromQL parser and checker for the subset the rule file uses. It is no substitute for
// `promtool check rules` (the Prometheus module is too heavy to depend on), but it catches what
// a rename or a hurried edit breaks: syntax, unknown metrics and labels, rate() of a gauge, a
// counter compared as is, vector matches that can never match, and template labels the
// expression does not carry.

// metricDecl is one metric as the code declares it.
type metricDecl struct {
	kind   string // "counter", "gauge", "histogram" or "summary"
	labels []string
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"instance", "job"}

type valType int

const (
	scalarType valType = iota
	vectorType
	rangeType
	stringType
)

func (v valType) String() string {
	return [...]string{"scalar", "instant vector", "range vector", "string"}[v]
}

// value is what an expression evaluates to, as far as the checker can tell.
type value struct {
	typ    valType
	labels map[string]bool // labels its series may carry
	// rawCounter marks series still holding a counter's (or histogram part's) running total,
	// which only rate() and its kin make comparable.
	rawCounter bool
	// bucket marks series of histogram buckets (they carry le), for histogram_quantile.
	bucket  bool
	metrics []string // metric names selected, as written
	str     string   // a string literal's value
}

type tok struct {
	kind string // "ident", "number", "duration", "string", "op", or the punctuation itself
	text string
	pos  int
}

func lex(src string) ([]tok, error) {
	var toks []tok
	for i := 0; i < len(src); {
		c := rune(src[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '_' || unicode.IsLetter(c):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == ':' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			toks = append(toks, tok{"ident", src[i:j], i})
			i = j
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(src) && unicode.IsDigit(rune(src[i+1]))):
			j := i
			for j < len(src) && (src[j] == '.' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			text := src[i:j]
			switch {
			case durationRE.MatchString(text):
				toks = append(toks, tok{"duration", text, i})
			default:
				if _, err := strconv.ParseFloat(text, 64); err != nil {
					return nil, fmt.Errorf("at %d: bad number or duration %q", i, text)
				}
				toks = append(toks, tok{"number", text, i})
			}
			i = j
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(src) && rune(src[j]) != c {
				if src[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("at %d: unterminated string", i)
			}
			raw := src[i : j+1]
			s := raw[1 : len(raw)-1]
			if c == '"' {
				var err error
				if s, err = strconv.Unquote(raw); err != nil {
					return nil, fmt.Errorf("at %d: bad string %s: %v", i, raw, err)
				}
			}
			toks = append(toks, tok{"string", s, i})
			i = j + 1
		case strings.ContainsRune("(){}[],:@", c):
			toks = append(toks, tok{string(c), string(c), i})
			i++
		default:
			op := ""
			for _, o := range []string{"==", "!=", ">=", "<=", "=~", "!~", "=", ">", "<", "+", "-", "*", "/", "%", "^"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("at %d: unexpected %q", i, c)
			}
			toks = append(toks, tok{"op", op, i})
			i += len(op)
		}
	}
	return append(toks, tok{"eof", "", len(src)}), nil
}

// durationRE is a Prometheus duration: "5m", "1h30m", "0s".
var durationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

var aggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "count": true, "group": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "quantile": true}

var precedence = map[string]int{"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, ">": 3, "<": 3, ">=": 3, "<=": 3,
	"+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6}

var comparisons = map[string]bool{"==": true, "!=": true, ">": true, "<": true, ">=": true, "<=": true}

// checker parses one expression and collects every fault it finds.
type checker struct {
	toks   []tok
	pos    int
	decls  map[string]metricDecl
	values map[string][]string // label: its possible values, where the code fixes them
	errs   []string
	// matchers records the equality matchers of every selector: metric -> label=value.
	matchers map[string][]string
}

type parseError struct{ msg string }

// checkExpr checks expr and returns what it evaluates to, with the faults found.
func checkExpr(expr string, decls map[string]metricDecl, values map[string][]string) (v value, c *checker) {
	c = &checker{decls: decls, values: values, matchers: map[string][]string{}}
	toks, err := lex(expr)
	if err != nil {
		c.errs = append(c.errs, "syntax: "+err.Error())
		return value{}, c
	}
	c.toks = toks
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			c.errs = append(c.errs, "syntax: "+pe.msg)
		}
	}()
	v = c.expr(1)
	if t := c.peek(); t.kind != "eof" {
		c.fail("unexpected %q after the expression", t.text)
	}
	if v.typ != vectorType && v.typ != scalarType {
		c.errorf("the expression is a %s, not an instant vector", v.typ)
	}
	return v, c
}

func (c *checker) peek() tok { return c.toks[c.pos] }

func (c *checker) next() tok {
	t := c.toks[c.pos]
	if t.kind != "eof" {
		c.pos++
	}
	return t
}

func (c *checker) fail(format string, args ...any) {
	panic(parseError{fmt.Sprintf("at %d: ", c.peek().pos) + fmt.Sprintf(format, args...)})
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *checker) expect(kind string) tok {
	t := c.next()
	if t.kind != kind {
		c.pos--
		c.fail("expected %s, found %q", kind, t.text)
	}
	return t
}

// binop returns the binary operator at the current token, if any.
func (c *checker) binop() string {
	t := c.peek()
	if (t.kind == "op" || t.kind == "ident") && precedence[t.text] > 0 {
		return t.text
	}
	return ""
}

func (c *checker) expr(minPrec int) value {
	lhs := c.unary()
	for {
		op := c.binop()
		if op == "" || precedence[op] < minPrec {
			return lhs
		}
		c.next()
		m := c.modifiers(op)
		var rhs value
		if op == "^" {
			rhs = c.expr(precedence[op])
		} else {
			rhs = c.expr(precedence[op] + 1)
		}
		lhs = c.binary(op, m, lhs, rhs)
	}
}

type matching struct {
	returnBool      bool
	on, ignoring    bool
	labels          []string
	groupLeft       bool
	groupRight      bool
	including       []string
	hasLabelMatcher bool
}

func (c *checker) modifiers(op string) matching {
	var m matching
	if c.peek().text == "bool" {
		c.next()
		if !comparisons[op] {
			c.errorf("bool modifier on %q, which is no comparison", op)
		}
		m.returnBool = true
	}
	switch c.peek().text {
	case "on", "ignoring":
		m.on = c.next().text == "on"
		m.ignoring = !m.on
		m.hasLabelMatcher = true
		m.labels = c.labelList()
	}
	switch c.peek().text {
	case "group_left", "group_right":
		if !m.hasLabelMatcher {
			c.fail("%s without on() or ignoring()", c.peek().text)
		}
		m.groupLeft = c.next().text == "group_left"
		m.groupRight = !m.groupLeft
		if c.peek().kind == "(" {
			m.including = c.labelList()
		}
	}
	return m
}

func (c *checker) labelList() []string {
	c.expect("(")
	var labels []string
	for c.peek().kind != ")" {
		labels = append(labels, c.expect("ident").text)
		if c.peek().kind != "," {
			break
		}
		c.next()
	}
	c.expect(")")
	return labels
}

func (c *checker) unary() value {
	if t := c.peek(); t.kind == "op" && (t.text == "-" || t.text == "+") {
		c.next()
		v := c.unary()
		if v.typ != scalarType && v.typ != vectorType {
			c.errorf("unary %s on a %s", t.text, v.typ)
		}
		return v
	}
	return c.postfix(c.primary())
}

func (c *checker) postfix(v value) value {
	for {
		switch t := c.peek(); {
		case t.kind == "[":
			c.next()
			c.expect("duration")
			if c.peek().kind == ":" {
				c.fail("subqueries are not supported by this checker")
			}
			c.expect("]")
			if v.typ != vectorType || len(v.metrics) != 1 || v.labels == nil {
				c.errorf("a range applies to a metric selector only")
			}
			v.typ = rangeType
		case t.kind == "ident" && t.text == "offset":
			c.next()
			c.expect("duration")
		default:
			return v
		}
	}
}

func (c *checker) primary() value {
	t := c.next()
	switch t.kind {
	case "number":
		return value{typ: scalarType}
	case "string":
		return value{typ: stringType, str: t.text}
	case "(":
		v := c.expr(1)
		c.expect(")")
		return v
	case "{":
		c.pos--
		return c.selector("")
	case "ident":
		switch {
		case aggregations[t.text]:
			return c.aggregation(t.text)
		case c.peek().kind == "(":
			return c.call(t.text)
		default:
			return c.selector(t.text)
		}
	}
	c.pos--
	c.fail("unexpected %q", t.text)
	return value{}
}

// baseMetric maps a series name to the metric declared for it: a histogram's _bucket, _sum
// and _count series to the histogram.
func (c *checker) baseMetric(name string) (string, metricDecl, bool) {
	if d, ok := c.decls[name]; ok {
		return name, d, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if d, ok := c.decls[base]; ok && (d.kind == "histogram" || (d.kind == "summary" && suffix != "_bucket")) {
			return base, d, true
		}
	}
	return "", metricDecl{}, false
}

func (c *checker) selector(name string) value {
	v := value{typ: vectorType, labels: map[string]bool{}, metrics: []string{name}}
	base, d, ok := c.baseMetric(name)
	if name == "" {
		c.errorf("selectors without a metric name are not checked; name the metric")
	} else if !ok {
		c.errorf("metric %s is not declared by the code", name)
	} else {
		for _, l := range append(slices.Clone(d.labels), targetLabels...) {
			v.labels[l] = true
		}
		v.rawCounter = d.kind == "counter" || base != name
		if strings.HasSuffix(name, "_bucket") {
			v.labels["le"] = true
			v.bucket = true
		}
	}
	if c.peek().kind != "{" {
		return v
	}
	c.next()
	for c.peek().kind != "}" {
		label := c.expect("ident").text
		op := c.expect("op").text
		val := c.expect("string").text
		switch op {
		case "=", "!=", "=~", "!~":
		default:
			c.fail("bad label matcher operator %q", op)
		}
		if ok && !v.labels[label] {
			c.errorf("metric %s has no label %q", name, label)
		}
		if op == "=~" || op == "!~" {
			if _, err := regexp.Compile("^(?:" + val + ")$"); err != nil {
				c.errorf("bad regular expression %q: %v", val, err)
			}
		}
		if op == "=" || op == "!=" {
			if allowed, known := c.values[label]; known && !slices.Contains(allowed, val) {
				c.errorf("label %s=%q: the code never sets that value (it sets %v)", label, val, allowed)
			}
			if op == "=" {
				c.matchers[name] = append(c.matchers[name], label+"="+strconv.Quote(val))
			}
		}
		if c.peek().kind != "," {
			break
		}
		c.next()
	}
	c.expect("}")
	return v
}

func (c *checker) grouping() (by, without bool, labels []string) {
	switch c.peek().text {
	case "by", "without":
		by = c.next().text == "by"
		return by, !by, c.labelList()
	}
	return false, false, nil
}

func (c *checker) aggregation(op string) value {
	by, without, labels := c.grouping()
	args := c.args()
	if !by && !without {
		by, without, labels = c.grouping()
	}
	want := 1
	if op == "topk" || op == "bottomk" || op == "quantile" {
		want = 2
	}
	if len(args) != want {
		c.errorf("%s takes %d argument(s), got %d", op, want, len(args))
		return value{typ: vectorType, labels: map[string]bool{}}
	}
	if want == 2 && args[0].typ != scalarType {
		c.errorf("%s's first argument must be a scalar", op)
	}
	in := args[len(args)-1]
	if in.typ != vectorType {
		c.errorf("%s of a %s, want an instant vector", op, in.typ)
	}
	out := value{typ: vectorType, labels: map[string]bool{}, metrics: in.metrics, bucket: in.bucket,
		rawCounter: in.rawCounter && (op == "sum" || op == "min" || op == "max" || op == "avg")}
	if op == "sum" || op == "avg" {
		for _, name := range in.metrics {
			if d := c.decls[name]; d.kind == "gauge" && strings.HasPrefix(name, "hookverify_inbox_") {
				// README: the inbox gauges are read from the database, the same on every instance.
				c.errorf("%s of %s, which every instance on one database exports alike: aggregate with max", op, name)
			}
		}
	}
	for _, l := range labels {
		if !in.labels[l] {
			c.errorf("%s by/without %q: no series of %v carries that label", op, l, in.metrics)
		}
	}
	switch {
	case by:
		for _, l := range labels {
			out.labels[l] = true
		}
	case without:
		maps.Copy(out.labels, in.labels)
		for _, l := range labels {
			delete(out.labels, l)
		}
	}
	if !out.labels["le"] {
		out.bucket = false
	}
	return out
}

func (c *checker) args() []value {
	c.expect("(")
	var args []value
	for c.peek().kind != ")" {
		args = append(args, c.expr(1))
		if c.peek().kind != "," {
			break
		}
		c.next()
	}
	c.expect(")")
	return args
}

func (c *checker) call(fn string) value {
	args := c.args()
	types := func(want ...valType) bool {
		if len(args) != len(want) {
			c.errorf("%s takes %d argument(s), got %d", fn, len(want), len(args))
			return false
		}
		for i, w := range want {
			if args[i].typ != w {
				c.errorf("%s: argument %d is a %s, want a %s", fn, i+1, args[i].typ, w)
				return false
			}
		}
		return true
	}
	switch fn {
	case "time":
		types()
		return value{typ: scalarType}
	case "rate", "increase", "irate":
		if !types(rangeType) {
			return value{typ: vectorType, labels: map[string]bool{}}
		}
		if !args[0].rawCounter {
			c.errorf("%s of %v, which is no counter: compare a gauge directly", fn, args[0].metrics)
		}
		return value{typ: vectorType, labels: args[0].labels, metrics: args[0].metrics, bucket: args[0].bucket}
	case "histogram_quantile":
		if !types(scalarType, vectorType) {
			return value{typ: vectorType, labels: map[string]bool{}}
		}
		in := args[1]
		if !in.bucket {
			c.errorf("histogram_quantile of %v, which are no histogram buckets or lost their le label", in.metrics)
		}
		if in.rawCounter {
			c.errorf("histogram_quantile of running totals %v: take rate() of the buckets first", in.metrics)
		}
		out := value{typ: vectorType, labels: maps.Clone(in.labels), metrics: in.metrics}
		delete(out.labels, "le")
		return out
	case "absent":
		types(vectorType)
		return value{typ: vectorType, labels: map[string]bool{}, metrics: args[0].metrics}
	case "label_replace":
		if !types(vectorType, stringType, stringType, stringType, stringType) {
			return value{typ: vectorType, labels: map[string]bool{}}
		}
		out := args[0]
		out.labels = maps.Clone(out.labels)
		if src := args[3].str; src != "" && !out.labels[src] {
			c.errorf("label_replace: source label %q is not on %v", src, out.metrics)
		}
		if _, err := regexp.Compile("^(?:" + args[4].str + ")$"); err != nil {
			c.errorf("label_replace: bad regular expression %q: %v", args[4].str, err)
		}
		out.labels[args[1].str] = true
		return out
	}
	c.errorf("function %s is not known to this checker", fn)
	return value{typ: vectorType, labels: map[string]bool{}}
}

func sameSet(a, b map[string]bool) bool { return maps.Equal(a, b) }

func without(set map[string]bool, labels []string) map[string]bool {
	out := maps.Clone(set)
	for _, l := range labels {
		delete(out, l)
	}
	return out
}

func subset(labels map[string]bool, of []string) bool {
	for l := range labels {
		if !slices.Contains(of, l) {
			return false
		}
	}
	return true
}

func (c *checker) binary(op string, m matching, lhs, rhs value) value {
	for _, side := range []value{lhs, rhs} {
		if side.typ != scalarType && side.typ != vectorType {
			c.errorf("%q on a %s", op, side.typ)
			return value{typ: vectorType, labels: map[string]bool{}}
		}
	}
	set := op == "and" || op == "or" || op == "unless"
	if comparisons[op] {
		for _, side := range []value{lhs, rhs} {
			if side.typ == vectorType && side.rawCounter {
				c.errorf("%v compared as is: a counter's running total says nothing; use rate() or increase()", side.metrics)
			}
		}
	}
	if lhs.typ == scalarType && rhs.typ == scalarType {
		if set {
			c.errorf("%q between scalars", op)
		}
		if comparisons[op] && !m.returnBool {
			c.errorf("comparison between scalars needs bool")
		}
		return value{typ: scalarType}
	}
	if lhs.typ == scalarType || rhs.typ == scalarType {
		if set {
			c.errorf("%q needs vectors on both sides", op)
		}
		if m.hasLabelMatcher {
			c.errorf("vector matching modifiers on %q with a scalar", op)
		}
		v := lhs
		if v.typ == scalarType {
			v = rhs
		}
		v.rawCounter = v.rawCounter && comparisons[op] && !m.returnBool
		return v
	}
	// Both are vectors: check that the match can ever find a pair.
	metrics := append(slices.Clone(lhs.metrics), rhs.metrics...)
	for _, l := range m.labels {
		if m.on && (!lhs.labels[l] || !rhs.labels[l]) {
			c.errorf("%s on(%s): not on both sides (%v)", op, l, metrics)
		}
		if m.ignoring && !lhs.labels[l] && !rhs.labels[l] {
			c.errorf("%s ignoring(%s): on neither side (%v)", op, l, metrics)
		}
	}
	// Without on(), series pair up on all their labels (but those ignored).
	matchL, matchR := without(lhs.labels, m.labels), without(rhs.labels, m.labels)
	if op != "or" && !m.on && !m.groupLeft && !m.groupRight && !sameSet(matchL, matchR) {
		c.errorf("%s between series with labels %v and %v never matches: use on() or ignoring()",
			op, slices.Sorted(maps.Keys(matchL)), slices.Sorted(maps.Keys(matchR)))
	}
	if m.on && !set {
		switch {
		case m.groupLeft && !subset(rhs.labels, m.labels):
			c.errorf("%s on(%v) group_left: the right side may hold several series per match", op, m.labels)
		case m.groupRight && !subset(lhs.labels, m.labels):
			c.errorf("%s on(%v) group_right: the left side may hold several series per match", op, m.labels)
		case !m.groupLeft && !m.groupRight && (!subset(lhs.labels, m.labels) || !subset(rhs.labels, m.labels)):
			c.errorf("%s on(%v): a side may hold several series per match; aggregate or use group_left/right", op, m.labels)
		}
	}
	out := value{typ: vectorType, metrics: metrics}
	switch {
	case op == "or":
		out.labels = maps.Clone(lhs.labels)
		maps.Copy(out.labels, rhs.labels)
		out.rawCounter = lhs.rawCounter || rhs.rawCounter
	case set:
		out.labels = lhs.labels
		out.rawCounter = lhs.rawCounter
	case m.groupLeft:
		out.labels = maps.Clone(lhs.labels)
		for _, l := range m.including {
			out.labels[l] = true
		}
	case m.groupRight:
		out.labels = maps.Clone(rhs.labels)
		for _, l := range m.including {
			out.labels[l] = true
		}
	case comparisons[op] && !m.returnBool:
		out.labels = lhs.labels // a filter: the left side's series as they are
		out.rawCounter = lhs.rawCounter
	case m.on:
		out.labels = map[string]bool{}
		for _, l := range m.labels {
			out.labels[l] = true
		}
	default:
		out.labels = without(lhs.labels, m.labels)
	}
	return out
}
