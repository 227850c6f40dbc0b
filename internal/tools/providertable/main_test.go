package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server/protocol"
)

// TestReadmeTableIsCurrent fails when README.md's provider table differs from the registry.
// A README without the markers fails too.
func TestReadmeTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Current(doc)
	if errors.Is(err, errNoMarkers) {
		t.Fatalf("README.md has no %s ... %s section; add the markers and run `go run ./internal/tools/providertable -w README.md`", beginMarker, endMarker)
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n" + Table(protocol.Default().All()); got != want {
		t.Fatalf("README.md's provider table differs from the registry: run `go run ./internal/tools/providertable -w README.md`")
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	ps := []*protocol.Protocol{
		{Name: "a", DisplayName: "A|B", SignatureScheme: "x\ny", SignsTimestamp: true, DefaultTolerance: 5 * time.Minute, IdentitySource: "id", NeedsURL: true, DocsURL: "https://a.example"},
		{Name: "b", DisplayName: "B", SignatureScheme: "token", StaticCredential: true, IdentitySource: "hash", DefaultTolerance: 0},
		{Name: "d", DisplayName: "D", SignatureScheme: "Bearer <token>", IdentitySource: "i"},
		{Name: "c", DisplayName: "C", SignatureScheme: "s", SignsTimestamp: true, DefaultTolerance: 30 * time.Second, IdentitySource: "i"},
	}
	got := Table(ps)
	for _, want := range []string{
		"| A\\|B | `a` | x y | yes (5 min) | id | yes | [docs](https://a.example) |\n",
		"| D | `d` | Bearer &lt;token&gt; | no | i | no |  |\n",
		"| B | `b` | token (static credential) | no | hash | no |  |\n",
		"| C | `c` | s | yes (30 s) | i | no |  |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 2+len(ps) {
		t.Errorf("table has %d lines", n)
	}
}

func TestReplaceAndRewrite(t *testing.T) {
	t.Parallel()
	doc := []byte("# Title\n\nbefore\n" + beginMarker + "\nold table\n" + endMarker + "\nafter\n")
	out, err := Replace(doc, "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\nbefore\n" + beginMarker + "\n| new |\n" + endMarker + "\nafter\n"
	if string(out) != want {
		t.Fatalf("Replace = %q", out)
	}
	if cur, _ := Current(out); cur != "\n| new |\n" {
		t.Fatalf("Current = %q", cur)
	}
	for _, bad := range []string{"no markers", endMarker + beginMarker, beginMarker + " only"} {
		if _, err := Replace([]byte(bad), "x"); !errors.Is(err, errNoMarkers) {
			t.Errorf("Replace(%q) = %v", bad, err)
		}
	}

	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, doc, 0o640); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run([]string{"-w", path}, &stdout); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(path)
	if cur, _ := Current(written); cur != "\n"+Table(protocol.Default().All()) {
		t.Fatalf("rewritten section = %q", cur)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v", info.Mode())
	}
	if !strings.HasSuffix(string(written), endMarker+"\nafter\n") || !strings.HasPrefix(string(written), "# Title\n\nbefore\n") {
		t.Fatalf("text outside the markers changed: %q", written)
	}
	// Rewriting twice is a no-op.
	if err := run([]string{"-w", path}, &stdout); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if !bytes.Equal(again, written) {
		t.Fatal("a second run changed the file")
	}

	stdout.Reset()
	if err := run(nil, &stdout); err != nil || stdout.String() != Table(protocol.Default().All()) {
		t.Fatalf("run without -w = %v, %q", err, stdout.String())
	}
	if err := run([]string{"-w", filepath.Join(t.TempDir(), "missing.md")}, &stdout); err == nil {
		t.Fatal("run -w on a missing file succeeded")
	}
	noMarkers := filepath.Join(t.TempDir(), "plain.md")
	os.WriteFile(noMarkers, []byte("plain\n"), 0o644)
	if err := run([]string{"-w", noMarkers}, &stdout); !errors.Is(err, errNoMarkers) {
		t.Fatalf("run -w without markers = %v", err)
	}
}
