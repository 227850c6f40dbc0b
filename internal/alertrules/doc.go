// Package alertrules holds no code: its test checks examples/prometheus/alerts.yml against the
// metrics the code declares and the alert table of README.md, so that a renamed metric or label
// breaks the build's tests instead of silencing an alert.
package alertrules
