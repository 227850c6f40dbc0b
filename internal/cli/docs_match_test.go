package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedCommandFiles are the docs whose hookverify command lines a reader copies.
var documentedCommandFiles = []string{
	"README.md", "RELIABILITY.md", "BENCHMARKS.md", "docs/*.md", "examples/*/README.md",
}

// TestDocumentedCommandsExist checks every hookverify command line the docs show, in code
// blocks and in inline code: the command (and its verb) must exist and every flag it passes
// must be one that command defines. Flags renamed or dropped in the code otherwise live on in
// the docs, and a newcomer's first copied command fails with "flag provided but not defined".
func TestDocumentedCommandsExist(t *testing.T) {
	helps := map[string]map[string]bool{} // command path -> its flags
	checked := 0
	for _, pattern := range documentedCommandFiles {
		files, err := filepath.Glob(filepath.Join("..", "..", pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no docs match %s (%v)", pattern, err)
		}
		for _, file := range files {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range documentedCommandLines(string(text)) {
				for _, args := range hookverifyInvocations(line.text) {
					if _, known := commands()[args[0]]; !known && !line.shell {
						continue // a file tree or another language's comment, not a command
					}
					checked++
					path, flags, ok := commandFlags(t, helps, args)
					if !ok {
						t.Errorf("%s: no such command: hookverify %s\n\tin: %s", file, strings.Join(args[:min(2, len(args))], " "), line.text)
						continue
					}
					for _, name := range flagNames(args[len(strings.Fields(path)):]) {
						if !flags[name] {
							t.Errorf("%s: hookverify %s has no flag --%s\n\tin: %s", file, path, name, line.text)
						}
					}
				}
			}
		}
	}
	t.Logf("checked %d documented hookverify commands", checked)
	if checked < 50 {
		t.Fatalf("found only %d documented hookverify commands; is the parser still finding them?", checked)
	}
}

// docLine is a line of code in the docs; shell when it is surely meant to be run: in a
// shell code block (sh, bash, console) or inline code. Lines of other blocks (file trees,
// output, other languages) count only where they name a command that exists.
type docLine struct {
	text  string
	shell bool
}

// documentedCommandLines returns the lines of fenced code blocks (a line ending in a
// backslash joined with the next) and the contents of inline code spans.
func documentedCommandLines(markdown string) []docLine {
	var lines []docLine
	inFence, shell := false, false
	pending := ""
	for line := range strings.Lines(markdown) {
		line = strings.TrimRight(line, "\r\n")
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			inFence = !inFence
			shell = inFence && slices.Contains([]string{"sh", "bash", "shell", "console"}, fence)
			pending = ""
			continue
		}
		if inFence {
			if strings.HasSuffix(line, "\\") {
				pending += strings.TrimSuffix(line, "\\") + " "
				continue
			}
			lines = append(lines, docLine{text: pending + line, shell: shell})
			pending = ""
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			lines = append(lines, docLine{text: m[1], shell: true})
		}
	}
	return lines
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// commandWord is what a command or verb name looks like.
var commandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// hookverifyInvocations splits a shell line into its commands (at |, &&, ||, ;, $( and
// backquotes) and returns the arguments after "hookverify" of each that runs it, be it as
// hookverify, ./bin/hookverify or go run ./cmd/hookverify.
func hookverifyInvocations(line string) [][]string {
	var out [][]string
	for _, segment := range shellSeparators.Split(line, -1) {
		fields := strings.Fields(segment)
		for i, f := range fields {
			f = strings.Trim(f, `"'()`)
			if strings.Contains(f, "=") || (f != "hookverify" && !strings.HasSuffix(f, "/hookverify")) {
				continue
			}
			if i > 0 && (fields[i-1] == "-o" || fields[i-1] == "build" || fields[i-1] == "install") {
				break // go build -o bin/hookverify ./cmd/hookverify: building, not running
			}
			if i+1 < len(fields) && commandWord.MatchString(fields[i+1]) {
				out = append(out, fields[i+1:])
			}
			break
		}
	}
	return out
}

var shellSeparators = regexp.MustCompile(`\|\||&&|[|;]|\$\(|\)`)

// commandFlags resolves args to a command path ("endpoint create" or "serve") by asking the
// CLI for its help, and returns the flags that command defines.
func commandFlags(t *testing.T, helps map[string]map[string]bool, args []string) (path string, flags map[string]bool, ok bool) {
	t.Helper()
	candidates := []string{args[0]}
	if len(args) > 1 && commandWord.MatchString(args[1]) {
		candidates = []string{args[0] + " " + args[1], args[0]}
	}
	for _, path := range candidates {
		if flags, seen := helps[path]; seen {
			if flags != nil {
				return path, flags, true
			}
			continue
		}
		helps[path] = nil
		code, stdout, stderr := run(t, "", append(strings.Fields(path), "-h")...)
		out := stdout + stderr
		if code != 0 || !strings.Contains(out, "Usage of hookverify "+path+":") {
			continue
		}
		flags := map[string]bool{}
		for _, m := range helpFlag.FindAllStringSubmatch(out, -1) {
			flags[m[1]] = true
		}
		helps[path] = flags
		return path, flags, true
	}
	return "", nil, false
}

// helpFlag matches a flag line of the flag package's help: two spaces, a dash, the name.
var helpFlag = regexp.MustCompile(`(?m)^  -([a-zA-Z0-9][a-zA-Z0-9-]*)`)

// flagNames returns the names of the flags among args ("--server=x" and "-h" included; a
// lone "-", standard input, is not a flag).
func flagNames(args []string) []string {
	var names []string
	for _, a := range args {
		a = strings.Trim(a, `"'`)
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		if name == "" || name == "h" || name == "help" || !commandWord.MatchString(strings.ToLower(name[:1])) {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// TestMetricsAreDocumented checks that README describes every metric the code declares, and
// declares every metric README describes: an operator builds alerts from README's list.
func TestMetricsAreDocumented(t *testing.T) {
	declaredName := regexp.MustCompile(`Name: +"(hookverify_[a-z_]+)"`)
	declared := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range declaredName.FindAllStringSubmatch(string(src), -1) {
			declared[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, name := range regexp.MustCompile(`hookverify_[a-z_]+`).FindAllString(string(readme), -1) {
		// A histogram's series are its name with _sum, _count or _bucket.
		documented[histogramSeries.ReplaceAllString(name, "")] = true
	}
	if len(declared) < 20 {
		t.Fatalf("found only %d declared metrics; is the pattern still finding them?", len(declared))
	}
	for name := range declared {
		if !documented[name] {
			t.Errorf("metric %s is not in README.md", name)
		}
	}
	for name := range documented {
		if !declared[name] {
			t.Errorf("README.md names metric %s, which the code does not declare", name)
		}
	}
}

var histogramSeries = regexp.MustCompile(`_(sum|count|bucket)$`)
