// Command providertable prints the Markdown table of every registered provider protocol, or,
// with -w FILE, rewrites the part of FILE between the markers
//
//	<!-- providers:begin -->
//	<!-- providers:end -->
//
// so that README.md's table is generated from protocol.Default() rather than kept by hand.
// Run from the repository root: go run ./internal/tools/providertable -w README.md
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookverify/hookverify/server/protocol"
)

// The markers that delimit the generated table in a Markdown file.
const (
	beginMarker = "<!-- providers:begin -->"
	endMarker   = "<!-- providers:end -->"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "providertable:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("providertable", flag.ContinueOnError)
	write := fs.String("w", "", "rewrite the table between the provider markers in this Markdown `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	table := Table(protocol.Default().All())
	if *write == "" {
		_, err := io.WriteString(stdout, table)
		return err
	}
	return rewriteFile(*write, table)
}

// Table renders one row per protocol, in the order given (Registry.All orders by name).
func Table(ps []*protocol.Protocol) string {
	var b strings.Builder
	b.WriteString("| provider | name | signature scheme | signed timestamp (default tolerance) | event identity | URL signed | docs |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, p := range ps {
		ts := "no"
		if p.SignsTimestamp {
			ts = "yes (" + formatDuration(p.DefaultTolerance) + ")"
		}
		scheme := p.SignatureScheme
		if p.StaticCredential {
			scheme += " (static credential)"
		}
		url := "no"
		if p.NeedsURL {
			url = "yes"
		}
		docs := ""
		if p.DocsURL != "" {
			docs = "[docs](" + p.DocsURL + ")"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n",
			cell(p.DisplayName), p.Name, cell(scheme), ts, cell(p.IdentitySource), url, docs)
	}
	return b.String()
}

// cell makes s safe inside a Markdown table cell: one line, pipes escaped, and angle
// brackets as entities so that "<token>" is not taken for HTML.
func cell(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ", "|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

// formatDuration prints whole minutes as "5 min" and anything else as seconds or Go's form.
func formatDuration(d time.Duration) string {
	switch {
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d > 0 && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// errNoMarkers is returned when a file lacks the two markers in order.
var errNoMarkers = errors.New("the file has no " + beginMarker + " ... " + endMarker + " section")

// Replace returns doc with the text between the markers replaced by table, and whether the
// markers were found.
func Replace(doc []byte, table string) ([]byte, error) {
	i := bytes.Index(doc, []byte(beginMarker))
	if i < 0 {
		return nil, errNoMarkers
	}
	start := i + len(beginMarker)
	j := bytes.Index(doc[start:], []byte(endMarker))
	if j < 0 {
		return nil, errNoMarkers
	}
	end := start + j
	var out bytes.Buffer
	out.Write(doc[:start])
	out.WriteString("\n")
	out.WriteString(table)
	out.Write(doc[end:])
	return out.Bytes(), nil
}

// Current returns the text between the markers of doc.
func Current(doc []byte) (string, error) {
	i := bytes.Index(doc, []byte(beginMarker))
	if i < 0 {
		return "", errNoMarkers
	}
	start := i + len(beginMarker)
	j := bytes.Index(doc[start:], []byte(endMarker))
	if j < 0 {
		return "", errNoMarkers
	}
	return string(doc[start : start+j]), nil
}

// rewriteFile replaces the table in path, writing through a temporary file and a rename so
// that a failure never leaves a half-written file.
func rewriteFile(path, table string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := Replace(doc, table)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, doc) {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".providertable-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
