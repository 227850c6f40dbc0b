package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/internal/hopbyhop"
)

// readDoc reads a document of the repository, relative to its root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// TestNodeEdgeReadmeNamesItsTestFiles checks that the Node edge's README describes every test
// file `npm test` runs, and names none that is gone: a reader looks there for what is tested.
func TestNodeEdgeReadmeNamesItsTestFiles(t *testing.T) {
	readme := readDoc(t, "examples/node-edge/README.md")
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "node-edge", "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Node edge tests found (%v)", err)
	}
	exists := map[string]bool{}
	for _, f := range files {
		name := "test/" + filepath.Base(f)
		exists[name] = true
		if !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("examples/node-edge/README.md does not describe %s", name)
		}
	}
	for _, name := range regexp.MustCompile(`test/[a-z-]+\.test\.js`).FindAllString(readme, -1) {
		if !exists[name] {
			t.Errorf("examples/node-edge/README.md names %s, which does not exist", name)
		}
	}
}

// TestEdgeFlagsInReadme checks that README's "Edge adapters" section names every flag of
// `hookverify edge`.
func TestEdgeFlagsInReadme(t *testing.T) {
	readme := readDoc(t, "README.md")
	start := strings.Index(readme, "## Edge adapters")
	if start < 0 {
		t.Fatal(`README.md has no "## Edge adapters" section`)
	}
	section := readme[start:]
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg edgeConfig
	cfg.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(section) {
			t.Errorf("README.md's Edge adapters section does not name --%s", f.Name)
		}
	})
}

// TestClientsDocSaysWhichHeadersAreNotForwarded checks that docs/clients.md, which tells
// other languages' edges what to forward, names the hop-by-hop fields both edges leave out:
// an edge that forwards them stores the same delivery differently from the Go and Node edges.
func TestClientsDocSaysWhichHeadersAreNotForwarded(t *testing.T) {
	doc := readDoc(t, "docs/clients.md")
	for _, name := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
		"Transfer-Encoding", "Upgrade", "Proxy-Authorization", "Proxy-Authenticate"} {
		if !hopbyhop.Is(name) {
			t.Fatalf("%s is no longer a hop-by-hop field: update this test and the docs", name)
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/clients.md does not name the hop-by-hop field %s, which the edges do not forward", name)
		}
	}
}
