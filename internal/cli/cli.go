// Package cli implements the hookverify command's subcommands; cmd/hookverify only calls Main.
package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// env bundles a command's standard streams so commands are testable.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":     {"run the gRPC server", runServe},
		"inbox":     {"stats|lease|ack|nack|extend|dead|requeue|discard: work the inbox of a running server", runInbox},
		"worker":    {"run a command for each inbox delivery (operation key in its environment)", runWorker},
		"bench":     {"load-test a running server: throughput and latency per verdict, vs a no-op gRPC baseline", runBench},
		"migrate":   {"apply database migrations and exit", runMigrate},
		"backup":    {"write a consistent copy of the embedded store while it serves", runBackup},
		"demo":      {"play the whole story on a throwaway embedded server", runDemo},
		"endpoint":  {"create|get|list|update endpoints on a running server", runEndpoint},
		"secret":    {"add|rotate|retire|list|fingerprint an endpoint's secrets on a running server", runSecret},
		"audit":     {"show recorded administrative actions, by endpoint and time", runAudit},
		"rekey":     {"re-encrypt every secret under the server's current master key", runRekey},
		"sign":      {"print the headers a provider would send with a body (test tool)", runSign},
		"verify":    {"send a delivery to a running server and print the answer", runVerify},
		"providers": {"list the provider protocols a running server verifies", runProviders},
		"edge":      {"serve webhook URLs over HTTP(S), forwarding each delivery to a server", runEdge},
		"token":     {"create|list|revoke callers' API tokens on a running server", runToken},
	}
}

// errUsage marks errors already explained by a usage message.
var errUsage = errors.New("usage")

// usageError is a usage mistake found after the flags parsed: a required flag missing, a value
// the command cannot take. Main prints it like any error but exits 2, as for a flag the flag
// package refused, so that a script tells a wrong command line from a failure (exit 1).
type usageError struct{ msg string }

func (u *usageError) Error() string        { return u.msg }
func (u *usageError) Is(target error) bool { return target == errUsage }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Main runs the command line and returns the exit status: 0 success, 1 failure, 2 usage.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signalContext()
	defer stop()
	e := env{stdin: stdin, stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hookverify: unknown command %q\n\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	if err := cmd.run(ctx, e, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Help asked for and printed, as for "hookverify -h": not a usage mistake.
			return 0
		}
		if errors.Is(err, errUsage) {
			var ue *usageError
			if errors.As(err, &ue) {
				// Not printed yet, unlike the flag package's own refusals.
				fmt.Fprintf(stderr, "hookverify %s: %v\n", args[0], err)
			}
			return 2
		}
		fmt.Fprintf(stderr, "hookverify %s: %v\n", args[0], err)
		var hinted *hintedError
		if errors.As(err, &hinted) {
			fmt.Fprintf(stderr, "hint: %s\n", hinted.hint)
		}
		if plaintextToTLS(err) {
			fmt.Fprintln(stderr, "hint: the server closed the connection before answering, as a TLS server does to a plaintext caller; if it serves TLS, give --ca (and --cert/--key for mutual TLS)")
		}
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: hookverify <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'hookverify <command> -h' for a command's flags.")
}

// newFlags makes a FlagSet that reports errors to stderr and returns them instead of exiting.
func newFlags(e env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("hookverify "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parseFlags parses and rejects stray positional arguments. -h returns flag.ErrHelp, which
// exits 0: the help was asked for.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var refusal bytes.Buffer
	if readsSecret[fs.Name()] {
		// The flag package repeats an unknown flag whole ("flag provided but not defined:
		// -..."), and a secret typed where standard input was meant is one when it begins with
		// "-" (a URL-safe base64 secret does 1 time in 64): held back until it is known which.
		fs.SetOutput(&refusal)
	}
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			out.Write(refusal.Bytes())
			return flag.ErrHelp
		}
		if msg := err.Error(); readsSecret[fs.Name()] &&
			(strings.HasPrefix(msg, "flag provided but not defined") || strings.HasPrefix(msg, "bad flag syntax")) {
			if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok && flagLike(name) {
				// A mistyped flag, named: no secret is a short run of lowercase letters.
				fmt.Fprintf(out, "unknown flag %s\n", name)
			} else {
				fmt.Fprintf(out, "unknown flag (not shown: it may be a secret); %s\n", secretFromStdinHint(fs.Name()))
			}
			fs.Usage()
			return errUsage
		}
		out.Write(refusal.Bytes())
		return errUsage
	}
	if fs.NArg() > 0 {
		if readsSecret[fs.Name()] {
			// The stray argument is most likely the secret itself, typed where standard input
			// was meant: not repeated into a terminal's scrollback or a CI log.
			fmt.Fprintf(fs.Output(), "unexpected argument (not shown: it may be a secret); %s\n", secretFromStdinHint(fs.Name()))
		} else {
			fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		}
		fs.Usage()
		return errUsage
	}
	return nil
}

// readsSecret names the commands that read a secret or a token from standard input, whose
// stray arguments parseFlags does not repeat.
var readsSecret = map[string]bool{"hookverify secret add": true, "hookverify secret rotate": true, "hookverify secret fingerprint": true, "hookverify token revoke": true,
	// --option-stdin reads a credential option (Meta's verify_token); one typed after
	// --option KEY, or after --option-stdin KEY, is a stray argument.
	"hookverify endpoint create": true, "hookverify endpoint update": true}

// flagLike reports whether name (as the flag package quotes it, "-name") looks like a flag
// mistyped rather than a secret: a dash or two, then at most 30 lowercase letters and hyphens.
// Secrets hold digits, capitals or more characters: a random one of this form is unlikely.
func flagLike(name string) bool {
	rest := strings.TrimPrefix(strings.TrimPrefix(name, "-"), "-")
	if rest == "" || len(rest) > 30 || rest[0] == '-' {
		return false
	}
	for _, c := range rest {
		if (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}

// secretFromStdinHint says how the command takes its secret from standard input.
func secretFromStdinHint(command string) string {
	if strings.HasPrefix(command, "hookverify endpoint ") {
		return fmt.Sprintf("a credential option is read from standard input: printf %%s \"$VALUE\" | %s ... --option-stdin KEY", command)
	}
	return fmt.Sprintf("this command reads the secret from standard input: printf %%s \"$SECRET\" | %s ...", command)
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// plaintextToTLS reports whether err is what a plaintext gRPC call to a TLS server gets: the
// server drops the connection when the first bytes are not a TLS hello, and gRPC reports only
// that the server's preface never came. A preface that looked like HTTP/1.1 came from an HTTP
// server (serve's --http-listen, say), not a TLS one: remoteFlags.hint says so instead.
func plaintextToTLS(err error) bool {
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.Unavailable && strings.Contains(s.Message(), "server preface") &&
		!strings.Contains(s.Message(), "HTTP/1.1")
}
