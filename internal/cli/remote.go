package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/ident"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
)

// remoteFlags are shared by every command that talks to a running server.
type remoteFlags struct {
	server                string
	timeout               time.Duration
	tokenFile             string
	caFile, cert, certKey string
}

func (r *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.server, "server", "127.0.0.1:7700", "address of the hookverify server")
	fs.DurationVar(&r.timeout, "timeout", 30*time.Second, "deadline for the call")
	fs.StringVar(&r.tokenFile, "token-file", "", "file holding the API token (default: $"+tokenEnv+"); sent as authorization: Bearer")
	fs.StringVar(&r.caFile, "ca", "", "PEM CAs of the server's certificate; enables TLS")
	fs.StringVar(&r.cert, "cert", "", "PEM client certificate for mutual TLS (with --key); enables TLS")
	fs.StringVar(&r.certKey, "key", "", "PEM private key of --cert")
}

// dial connects to the server with the token and TLS settings of the flags and environment.
func (r *remoteFlags) dial(opts ...client.Option) (*client.Conn, error) {
	// A command run once wants the server's own answer ("storage not ready yet"), not the
	// client's refusal of an instance whose health is NOT_SERVING: see dialGated.
	return r.dialGated(append(opts, client.WithoutHealthGate())...)
}

// dialGated connects as dial does, with calls going only to instances whose health says
// SERVING, as a long-running worker wants (client.Dial).
func (r *remoteFlags) dialGated(opts ...client.Option) (*client.Conn, error) {
	if r.timeout <= 0 {
		// Every call would fail at once with a bare DeadlineExceeded, which reads like a slow
		// server; 0 does not mean "no deadline" here.
		return nil, usagef("--timeout %v: want a positive duration, e.g. 30s", r.timeout)
	}
	if err := checkAddress("--server", r.server, "--ca"); err != nil {
		return nil, err
	}
	if (r.cert == "") != (r.certKey == "") {
		// Named as the flags, rather than as the client package's certificate and key files.
		return nil, usagef("--cert and --key go together: a client certificate needs its private key")
	}
	useTLS := r.caFile != "" || r.cert != "" || r.certKey != ""
	if useTLS {
		opts = append(opts, client.WithTLSFiles(r.caFile, r.cert, r.certKey))
	}
	token, err := readToken(r.tokenFile)
	if err != nil {
		return nil, err
	}
	if strings.ContainsFunc(token, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		// Said here with the token's source, which the client package's refusal cannot name
		// (and never quoting the token).
		return nil, fmt.Errorf("the API token in %s holds a space or a character that is not printable ASCII; a token is what 'token create' printed (hvt_...)", r.tokenSource())
	}
	opts = append(opts, client.WithGRPCOptions(grpc.WithChainUnaryInterceptor(r.hintInterceptor(token != ""))))
	if token == "" {
		return client.Dial(r.server, opts...)
	}
	conn, err := client.Dial(r.server, append(opts, client.WithToken(token))...)
	if errors.Is(err, client.ErrTokenInClear) {
		// The client package says it in terms of its Go API (WithTLS); said here in flags.
		return nil, fmt.Errorf("refusing to send the API token of %s in clear to %s, which is not loopback: give --ca (the CA of the server's --tls-cert) to speak TLS", r.tokenSource(), r.server)
	}
	return conn, err
}

// hintedError is a call's error with a sentence saying what to do about it, which Main prints
// on a line of its own. The error and its gRPC status (code and message) stay the call's own,
// for scripts that read the code and for code that inspects the status.
type hintedError struct {
	err  error
	hint string
}

func (h *hintedError) Error() string              { return h.err.Error() }
func (h *hintedError) Unwrap() error              { return h.err }
func (h *hintedError) GRPCStatus() *status.Status { return status.Convert(h.err) }

// hintInterceptor adds a hint to the errors of calls that never reached the server, or that
// the server refused for want of a caller: gRPC reports the first as transport text ("no
// children to pick from" for a host name that does not resolve) and the server answers
// "authentication required" alike to no token, a wrong one and an unknown certificate, while
// only the CLI knows which flags it was given and what it sent.
func (r *remoteFlags) hintInterceptor(sentToken bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if hint := r.hint(method, req, err, sentToken); hint != "" {
			return &hintedError{err: err, hint: hint}
		}
		return err
	}
}

// hint says what to fix for the error of a call of method with req, or "" when the error says
// it well enough itself.
func (r *remoteFlags) hint(method string, req any, err error, sentToken bool) string {
	s, ok := status.FromError(err)
	if !ok {
		return ""
	}
	msg := s.Message()
	switch s.Code() {
	case codes.Unavailable:
		switch {
		case strings.Contains(msg, "looked like an HTTP/1.1 header"):
			// Not a TLS server (see plaintextToTLS): an HTTP/1.1 one answered.
			return fmt.Sprintf("an HTTP/1.1 server answered at %s, not serve's gRPC listener: is it serve's --http-listen (/metrics, /healthz) or another service? --server is serve's --listen address", r.server)
		case strings.Contains(msg, "connection refused") && noPort(r.server):
			return fmt.Sprintf("nothing listens at %s on port 443, which gRPC dials when --server names no port: give host:port (serve's --listen, 127.0.0.1:7700 by default)", r.server)
		case strings.Contains(msg, "connection refused"):
			return fmt.Sprintf("nothing listens at %s: is 'hookverify serve' running there, and is --server its --listen address?", r.server)
		case strings.Contains(msg, "no children to pick from"), strings.Contains(msg, "produced zero addresses"), strings.Contains(msg, "no such host"):
			return fmt.Sprintf("the host of --server %s does not resolve to any address: check the name, or give an IP address", r.server)
		case strings.Contains(msg, "certificate signed by unknown authority"):
			if r.caFile == "" {
				return "the server's certificate is not signed by a CA this system trusts: give --ca the CA file that signed the server's --tls-cert"
			}
			return fmt.Sprintf("the server's certificate is not signed by a CA of --ca %s: give --ca the CA file that signed the server's --tls-cert", r.caFile)
		case strings.Contains(msg, "certificate is valid for"), strings.Contains(msg, "certificate is not valid for any names"):
			return fmt.Sprintf("the server's certificate does not name the host of --server %s: call it by a name or IP address its certificate holds", r.server)
		case strings.Contains(msg, "certificate has expired or is not yet valid"):
			return "the server's certificate has expired or is not valid yet (or this machine's clock is wrong): renew the server's --tls-cert"
		case strings.Contains(msg, "first record does not look like a TLS handshake"):
			return fmt.Sprintf("the server at %s does not speak TLS (it serves plaintext without --tls-cert): drop --ca, --cert and --key, or start it with --tls-cert and --tls-key", r.server)
		}
	case codes.Unauthenticated:
		switch {
		case sentToken:
			return "the server does not know the API token sent (" + r.tokenSource() + "), or it was revoked: give the bearerToken that 'token create' printed, of a token 'token list' does not show revoked"
		case r.cert != "":
			return fmt.Sprintf("the server did not accept the client certificate of --cert %s: it must be signed by a CA of the server's --client-ca and valid now (the server's log says why); or send an API token in $%s or --token-file", r.cert, tokenEnv)
		default:
			return fmt.Sprintf("no API token was sent: put it in $%s or in a file named by --token-file (or, with mutual TLS, give --cert and --key)", tokenEnv)
		}
	case codes.PermissionDenied:
		// The server says only that the caller's scopes do not allow the call (the same for
		// every refusal, so that it tells nothing about endpoints out of scope); the scope
		// each call needs is no secret (README, server/authz.go).
		return scopeNeeded(method, req)
	}
	return ""
}

// scopeNeeded says which scope a call of method with req needs.
func scopeNeeded(method string, req any) string {
	const get = "; 'token list' shows a token's scopes"
	switch {
	case strings.HasPrefix(method, "/"+hookverifyv1.AdminService_ServiceDesc.ServiceName+"/"),
		strings.HasPrefix(method, "/"+hookverifyv1.TokenService_ServiceDesc.ServiceName+"/"):
		return "this command needs a caller with the admin scope" + get
	case method == hookverifyv1.VerifierService_Verify_FullMethodName:
		id := req.(*hookverifyv1.VerifyRequest).GetEndpointId()
		return fmt.Sprintf("verify needs a caller whose scopes cover verify:%s (verify:%s, a verify:prefix* matching it, or verify:*)", id, id) + get
	case method == hookverifyv1.InboxService_GetInboxStats_FullMethodName:
		// It names no delivery: any inbox scope will do, and the answer holds the endpoints
		// that scope covers.
		return "inbox stats needs a caller with an inbox scope (inbox:*, inbox:<endpoint> or inbox:prefix*); it shows the endpoints that scope covers" + get
	}
	var ids []string
	switch req := req.(type) {
	case *hookverifyv1.LeaseRequest:
		ids = req.GetEndpointIds()
	case *hookverifyv1.ListDeadLettersRequest:
		ids = req.GetEndpointIds()
	default:
		if strings.HasPrefix(method, "/"+hookverifyv1.InboxService_ServiceDesc.ServiceName+"/") {
			return "this needs the inbox scope on the endpoint of every delivery named (the server answers the same for an inbox id that does not exist)" + get
		}
		return ""
	}
	if len(ids) == 0 {
		return "without --endpoint this needs inbox:* (every endpoint): a caller scoped to some endpoints names them with --endpoint" + get
	}
	return "this needs the inbox scope on every --endpoint given (inbox:" + strings.Join(ids, ", inbox:") + ", or a prefix* matching them)" + get
}

// noPort reports whether a host:port address lacks its port ("127.0.0.1", "localhost").
func noPort(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	var ae *net.AddrError
	return errors.As(err, &ae) && ae.Err == "missing port in address"
}

// tokenSource names where the API token came from, never the token itself.
func (r *remoteFlags) tokenSource() string {
	if r.tokenFile != "" {
		return "--token-file " + r.tokenFile
	}
	return "$" + tokenEnv
}

// readToken returns the API token: the file's content when a file is named, else $HOOKVERIFY_TOKEN.
// A token on the command line itself would show in process listings, so there is no flag for it.
// Both are trimmed alike: a variable filled from a file (a Kubernetes secret, an env file)
// keeps the file's trailing newline, which no token has.
// A leading UTF-8 byte order mark, which Windows editors write, is dropped too: no token has one.
func readToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(strings.TrimPrefix(os.Getenv(tokenEnv), "\ufeff")), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(strings.TrimPrefix(string(data), "\ufeff"))
	if token == "" {
		// Calling without a token would end in a bare Unauthenticated (or, on a server without
		// authentication, hide that the token was never provisioned).
		return "", fmt.Errorf("--token-file %s is empty: write the token 'token create' printed into it", file)
	}
	return token, nil
}

// call dials the server, runs fn under the timeout and prints its result as JSON.
func (r *remoteFlags) call(ctx context.Context, e env, fn func(ctx context.Context, c *client.Conn) (proto.Message, error)) error {
	conn, err := r.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	msg, err := fn(ctx, conn)
	if err != nil {
		return err
	}
	return printJSON(e.stdout, msg)
}

// printJSON prints msg as indented JSON. protojson deliberately varies its own whitespace from
// build to build, so its compact output is re-indented with encoding/json for stable output.
func printJSON(w io.Writer, msg proto.Message) error {
	data, err := protojson.Marshal(msg)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, data, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// subcommand dispatches "hookverify <group> <verb>".
func subcommand(ctx context.Context, e env, group string, args []string, verbs map[string]func(context.Context, env, []string) error) error {
	if len(args) == 0 || verbs[args[0]] == nil {
		names := make([]string, 0, len(verbs))
		for v := range verbs {
			names = append(names, v)
		}
		fmt.Fprintf(e.stderr, "usage: hookverify %s <%s> [flags]\n", group, strings.Join(sortedStrings(names), "|"))
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintf(e.stderr, "\nRun 'hookverify %s <verb> -h' for a verb's flags.\n", group)
			return flag.ErrHelp
		}
		return errUsage
	}
	return verbs[args[0]](ctx, e, args[1:])
}

// endpointFlags are the settings flags of endpoint create and update.
type endpointFlags struct {
	id, provider, dedupeScope string
	tolerance                 time.Duration
	maxBody                   int64
	disabled                  bool
	options                   multiFlag
	// optionStdin names the option whose value is read from standard input (a credential:
	// Meta's verify_token), and stdinValue is that value once read.
	optionStdin multiFlag
	stdinValue  string
}

// register declares the flags of endpoint create, or with update those of endpoint update: a
// setting it is not given stays as stored, so its help says what giving it does rather than
// create's default, and the provider and dedupe scope, fixed at creation (the server refuses a
// change), are not offered.
func (f *endpointFlags) register(fs *flag.FlagSet, update bool) {
	fs.StringVar(&f.id, "id", "", "endpoint id (required)")
	if !update {
		fs.StringVar(&f.provider, "provider", "", "provider name, e.g. stripe (required; see 'hookverify providers')")
		fs.DurationVar(&f.tolerance, "tolerance", 0, "timestamp tolerance, e.g. 5m (0: the provider's default, as hookverify providers lists it)")
		fs.Int64Var(&f.maxBody, "max-body-bytes", 0, "largest accepted body (0: the default, 1 MiB)")
		fs.StringVar(&f.dedupeScope, "dedupe-scope", "", "dedupe scope shared with other endpoints (default: the id; fixed once created)")
		fs.BoolVar(&f.disabled, "disabled", false, "reject every delivery with ENDPOINT_DISABLED")
		fs.Var(&f.options, "option", "protocol option key=value (repeatable)")
		fs.Var(&f.optionStdin, "option-stdin", optionStdinHelp)
		return
	}
	fs.DurationVar(&f.tolerance, "tolerance", 0, "new timestamp tolerance, e.g. 5m; 0 returns to the provider's default (default: unchanged)")
	fs.Int64Var(&f.maxBody, "max-body-bytes", 0, "new largest accepted body; 0 returns to the default, 1 MiB (default: unchanged)")
	fs.BoolVar(&f.disabled, "disabled", false, "--disabled rejects every delivery with ENDPOINT_DISABLED, --disabled=false accepts them again (default: unchanged)")
	fs.Var(&f.options, "option", "protocol option key=value (repeatable); given once or more, the options given replace all stored ones (default: unchanged)")
	fs.Var(&f.optionStdin, "option-stdin", optionStdinHelp+"; counts as an --option given")
}

// optionStdinHelp describes --option-stdin.
const optionStdinHelp = "protocol option KEY whose value is read from standard input, one line: a credential such as Meta's verify_token, kept out of process listings and shell history"

// readOptionStdin reads the value of --option-stdin's option from standard input, as
// readStdinLine reads a secret. Its refusals exit 1, as readSecret's do: what standard input
// holds is no part of the command line.
func (f *endpointFlags) readOptionStdin(e env) error {
	if len(f.optionStdin) == 0 {
		return nil
	}
	key := f.optionStdin[0]
	value, err := readStdinLine(e, key)
	switch {
	case errors.Is(err, errNoStdinValue):
		return fmt.Errorf("--option-stdin %s: no value on standard input (pipe it in: printf %%s \"$VALUE\" | hookverify endpoint ... --option-stdin %s)", key, key)
	case errors.Is(err, errStdinLines):
		// The value is not quoted: it is a credential.
		return fmt.Errorf("--option-stdin %s: the value on standard input is more than one line: give one value, on one line", key)
	case err != nil:
		return fmt.Errorf("--option-stdin %s: %w", key, err)
	}
	f.stdinValue = value
	return nil
}

// warnCredentialOnCommandLine says on standard error when an --option given on the command line
// is one of provider's credentials: it was visible to every local user in the process list,
// and is in the shell's history. The value is not repeated.
func warnCredentialOnCommandLine(e env, provider string, options []string) {
	p, ok := protocol.Default().Lookup(provider)
	if !ok {
		return
	}
	for _, kv := range options {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(p.CredentialOptions, k) {
			fmt.Fprintf(e.stderr, "warning: --option %s is a credential, and on the command line it shows in process listings and shell history: give it with --option-stdin %s (printf %%s \"$VALUE\" | hookverify endpoint ... --option-stdin %s)\n", k, k, k)
		}
	}
}

// check refuses, as usage errors before any call, settings the server would refuse under its
// field names (timestamp_tolerance, max_body_bytes) and a malformed --option.
func (f *endpointFlags) check(e env, fs *flag.FlagSet) error {
	if err := cmp.Or(
		inRange(e, "tolerance", f.tolerance, 0, server.MaxTolerance),
		inRange(e, "max-body-bytes", f.maxBody, 0, server.MaxBodyCeiling),
	); err != nil {
		return err
	}
	switch {
	case len(f.optionStdin) > 1:
		return usagef("--option-stdin given %d times: standard input holds one value; give the other options with --option", len(f.optionStdin))
	case len(f.optionStdin) == 1 && (f.optionStdin[0] == "" || strings.Contains(f.optionStdin[0], "=")):
		// The value is not quoted: after "=" it may be the credential itself.
		return usagef("--option-stdin takes the option's KEY alone (e.g. --option-stdin verify_token); its value is read from standard input")
	case len(f.optionStdin) == 1:
		for _, kv := range f.options {
			if k, _, _ := strings.Cut(kv, "="); k == f.optionStdin[0] {
				return usagef("--option-stdin %s and --option %s=...: give it once", k, k)
			}
		}
	}
	return f.apply(fs, &hookverifyv1.Endpoint{})
}

// apply copies the flags that were set on the command line onto ep.
func (f *endpointFlags) apply(fs *flag.FlagSet, ep *hookverifyv1.Endpoint) error {
	var err error
	optionsGiven := false
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "option-stdin":
			optionsGiven = true
		case "provider":
			ep.Provider = f.provider
		case "tolerance":
			ep.TimestampTolerance = durationpb.New(f.tolerance)
		case "max-body-bytes":
			ep.MaxBodyBytes = f.maxBody
		case "dedupe-scope":
			ep.DedupeScope = f.dedupeScope
		case "disabled":
			ep.Disabled = f.disabled
		case "option":
			optionsGiven = true
			for _, kv := range f.options {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					err = usagef("--option %q: want key=value", kv)
					return
				}
			}
		}
	})
	if err != nil || !optionsGiven {
		return err
	}
	// --option and --option-stdin together are the options given, which replace all others.
	ep.Options = map[string]string{}
	for _, kv := range f.options {
		k, v, _ := strings.Cut(kv, "=")
		ep.Options[k] = v
	}
	if len(f.optionStdin) == 1 {
		ep.Options[f.optionStdin[0]] = f.stdinValue
	}
	return nil
}

func runEndpoint(ctx context.Context, e env, args []string) error {
	return subcommand(ctx, e, "endpoint", args, map[string]func(context.Context, env, []string) error{
		"create": endpointCreate,
		"get":    endpointGet,
		"list":   endpointList,
		"update": endpointUpdate,
	})
}

func endpointCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "endpoint create")
	var r remoteFlags
	var f endpointFlags
	r.register(fs)
	f.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.id == "" || f.provider == "" {
		return usagef("--id and --provider are required")
	}
	// An id or scope no endpoint can have is a value of the wrong form: refused here, exit 2,
	// as the server would refuse it (internal/ident), rather than sent to fail as a call.
	if !ident.Valid(f.id) {
		return usagef("--id %q: want 1 to %d characters of A-Z a-z 0-9 . _ -", f.id, ident.MaxLength)
	}
	if f.dedupeScope != "" && !ident.Valid(f.dedupeScope) {
		return usagef("--dedupe-scope %q: want 1 to %d characters of A-Z a-z 0-9 . _ -", f.dedupeScope, ident.MaxLength)
	}
	if err := f.check(e, fs); err != nil {
		return err
	}
	if err := f.readOptionStdin(e); err != nil {
		return err
	}
	warnCredentialOnCommandLine(e, f.provider, f.options)
	ep := &hookverifyv1.Endpoint{Id: f.id}
	if err := f.apply(fs, ep); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: ep})
	})
}

func endpointGet(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "endpoint get")
	var r remoteFlags
	r.register(fs)
	id := fs.String("id", "", "endpoint id (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return usagef("--id is required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Admin.GetEndpoint(ctx, &hookverifyv1.GetEndpointRequest{Id: *id})
	})
}

// endpointList lists the endpoints by id, a page at a time as inbox dead does: the page after
// --page-token, or with --all every page to the last. Every endpoint in one answer passed the
// client's 4 MiB receive limit on a platform with an endpoint per tenant, and every endpoint
// list failed.
func endpointList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "endpoint list")
	var r remoteFlags
	r.register(fs)
	limit := fs.Int("limit", 1000, "how many to list per page (1-1000; a page of large endpoints holds fewer)")
	pageToken := fs.String("page-token", "", "list the page after the one whose nextPageToken this is")
	all := fs.Bool("all", false, "follow the pages to the last, printing each as a JSON document of its own")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "limit", *limit, 1, 1000); err != nil {
		return err
	}
	return printPages(ctx, e, &r, "endpoint list", "more endpoints follow", *all, *pageToken,
		func(ctx context.Context, c *client.Conn, token string) (*hookverifyv1.ListEndpointsResponse, error) {
			return c.Admin.ListEndpoints(ctx, &hookverifyv1.ListEndpointsRequest{PageSize: int32(*limit), PageToken: token})
		})
}

// endpointUpdate changes only the settings given as flags: it reads the endpoint, applies them
// and writes the whole endpoint back, on condition that nobody updated it since the read (the
// read's update_time). If somebody did (ABORTED), it reads again and reapplies the flags, so
// that the other change is kept rather than undone.
func endpointUpdate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "endpoint update")
	var r remoteFlags
	var f endpointFlags
	r.register(fs)
	f.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.id == "" {
		return usagef("--id is required")
	}
	// Before any call, as in endpoint create: not after the endpoint was read.
	if err := f.check(e, fs); err != nil {
		return err
	}
	if err := f.readOptionStdin(e); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		for attempt := 1; ; attempt++ {
			got, err := c.Admin.GetEndpoint(ctx, &hookverifyv1.GetEndpointRequest{Id: f.id})
			if err != nil {
				return nil, err
			}
			ep := got.GetEndpoint()
			if attempt == 1 {
				warnCredentialOnCommandLine(e, ep.GetProvider(), f.options)
			}
			if err := f.apply(fs, ep); err != nil {
				return nil, err
			}
			resp, err := c.Admin.UpdateEndpoint(ctx, &hookverifyv1.UpdateEndpointRequest{Endpoint: ep})
			if status.Code(err) != codes.Aborted || attempt == maxUpdateAttempts {
				return resp, err
			}
		}
	})
}

// maxUpdateAttempts bounds endpointUpdate's reads and writes when other updates keep coming.
const maxUpdateAttempts = 5

func runSecret(ctx context.Context, e env, args []string) error {
	return subcommand(ctx, e, "secret", args, map[string]func(context.Context, env, []string) error{
		"add":         secretAdd,
		"rotate":      secretRotate,
		"retire":      secretRetire,
		"list":        secretList,
		"fingerprint": secretFingerprint,
	})
}

// readSecret reads the secret from standard input: never from the command line, where other
// users of the machine can see it in the process list. One trailing newline (LF or CRLF) is
// removed, and a leading UTF-8 byte order mark, which Windows editors write at the start of a
// text file: neither is part of any provider's secret, and kept, the stored secret would
// fail every delivery as BAD_SIGNATURE with nothing to show why. A line break left inside is
// refused: no secret holds one (SendGrid's key is given without PEM armor), and two secrets
// pasted as one (the old and the new) would be stored as a third that matches nothing.
func readSecret(e env) (string, error) {
	secret, err := readStdinLine(e, "secret")
	switch {
	case errors.Is(err, errNoStdinValue):
		return "", errors.New("no secret on standard input (pipe it in: printf %s \"$SECRET\" | hookverify secret add ...)")
	case errors.Is(err, errStdinLines):
		// The secret itself is not quoted: it may be a real one.
		return "", errors.New("the secret on standard input is more than one line: give one secret, on one line (add a second one with another 'secret add')")
	}
	return secret, err
}

// errNoStdinValue and errStdinLines are readStdinLine's refusals: nothing given, and more
// than one line.
var (
	errNoStdinValue = errors.New("nothing on standard input")
	errStdinLines   = errors.New("more than one line on standard input")
)

// readStdinLine reads one value given on standard input, as readSecret describes, prompting
// for what when standard input is a terminal.
func readStdinLine(e env, what string) (string, error) {
	if f, ok := e.stdin.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(e.stderr, "%s (end with Enter, then Ctrl-D): ", what)
		}
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading the %s from standard input: %w", what, err)
	}
	value := strings.TrimPrefix(string(data), "\ufeff")
	value = strings.TrimSuffix(strings.TrimSuffix(value, "\n"), "\r")
	switch {
	case value == "":
		return "", errNoStdinValue
	case strings.ContainsAny(value, "\r\n"):
		return "", errStdinLines
	}
	return value, nil
}

func secretAdd(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secret add")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "endpoint id (required)")
	notBefore := fs.String("not-before", "", "RFC 3339 time the secret starts to authenticate (default: now)")
	notAfter := fs.String("not-after", "", "RFC 3339 time the secret stops (default: never)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *endpoint == "" {
		return usagef("--endpoint is required")
	}
	req := &hookverifyv1.AddSecretRequest{EndpointId: *endpoint}
	var err error
	if req.NotBefore, err = parseOptionalTime("--not-before", *notBefore); err != nil {
		return err
	}
	if req.NotAfter, err = parseOptionalTime("--not-after", *notAfter); err != nil {
		return err
	}
	if req.Secret, err = readSecret(e); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Admin.AddSecret(ctx, req)
	})
}

func secretRotate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secret rotate")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "endpoint id (required)")
	overlap := fs.Duration("overlap", 24*time.Hour, "how long the previous secrets keep working")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *endpoint == "" {
		return usagef("--endpoint is required")
	}
	if *overlap < 0 {
		// Refused here, naming the flag, rather than by the server after the secret was read.
		return usagef("--overlap %v: want 0 or more (0: the previous secrets stop at once)", *overlap)
	}
	secret, err := readSecret(e)
	if err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Admin.RotateSecret(ctx, &hookverifyv1.RotateSecretRequest{EndpointId: *endpoint, Secret: secret, Overlap: durationpb.New(*overlap)})
	})
}

func secretRetire(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secret retire")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "endpoint id (required)")
	id := fs.String("id", "", "secret id (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *endpoint == "" || *id == "" {
		return usagef("--endpoint and --id are required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		resp, err := c.Admin.RetireSecret(ctx, &hookverifyv1.RetireSecretRequest{EndpointId: *endpoint, SecretId: *id})
		if err == nil {
			warnRecentlyUsed(e, resp.GetSecret(), time.Now())
			warnNoSecretLeft(ctx, e, c, *endpoint)
		}
		return resp, err
	})
}

// recentUse is how recent a use of a secret makes retiring it worth a warning.
const recentUse = time.Hour

// warnRecentlyUsed says on standard error when the retired secret authenticated a delivery
// within recentUse before its retirement: the provider may still sign with it (a rotation not
// finished on its side, a retry of an old delivery), and such deliveries are now rejected,
// which many providers never retry. The retirement is done; the warning says how to undo its
// effect. Uses are recorded every few seconds, so a use in the last moments may not show.
// Both times are the server's (the retirement's, not this machine's clock, which may be off by
// hours); now stands in for a server that reports no retirement time.
func warnRecentlyUsed(e env, sec *hookverifyv1.SecretInfo, now time.Time) {
	used := sec.GetLastUsedTime()
	if retired := sec.GetRetireTime(); retired != nil {
		now = retired.AsTime()
	}
	if used == nil || now.Sub(used.AsTime()) > recentUse {
		return
	}
	ago := max(now.Sub(used.AsTime()), 0).Round(time.Second)
	fmt.Fprintf(e.stderr, "warning: secret %s authenticated a delivery %s before its retirement: deliveries still signed with it are now rejected; if the provider still uses it, add it again with `secret add`\n", sec.GetId(), ago)
}

// warnNoSecretLeft says on standard error when a retirement left the endpoint no secret in
// force: every delivery is then answered UNAVAILABLE (retried by the provider, accepted by
// none) until one is added, which is rarely what the retirement meant. A failed listing says
// nothing: the retirement itself is done.
func warnNoSecretLeft(ctx context.Context, e env, c *client.Conn, endpointID string) {
	list, err := c.Admin.ListSecrets(ctx, &hookverifyv1.ListSecretsRequest{EndpointId: endpointID})
	if err != nil {
		return
	}
	until := "one is added with `secret add`"
	for _, sec := range list.GetSecrets() {
		switch sec.GetState() {
		case hookverifyv1.SecretState_SECRET_STATE_ACTIVE, hookverifyv1.SecretState_SECRET_STATE_EXPIRING:
			return
		case hookverifyv1.SecretState_SECRET_STATE_SCHEDULED:
			until = "a scheduled one starts, or one is added with `secret add`"
		}
	}
	fmt.Fprintf(e.stderr, "warning: endpoint %s has no secret in force now: its signed deliveries are answered UNAVAILABLE (the provider retries) until %s\n", endpointID, until)
}

func secretList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "secret list")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "endpoint id (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *endpoint == "" {
		return usagef("--endpoint is required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Admin.ListSecrets(ctx, &hookverifyv1.ListSecretsRequest{EndpointId: *endpoint})
	})
}

func runProviders(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "providers")
	var r remoteFlags
	r.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Admin.ListProviders(ctx, &hookverifyv1.ListProvidersRequest{})
	})
}

func runVerify(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "verify")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "endpoint id (required)")
	bodyFile := fs.String("body", "", "file holding the raw body, or - for standard input (required)")
	method := fs.String("method", "POST", "HTTP method the provider used")
	url := fs.String("url", "https://hooks.example.com/", "absolute URL the provider called")
	var headers multiFlag
	fs.Var(&headers, "H", "header 'Name: value' (repeatable, order kept; a value of several lines, as sign prints them, is one header a line; sign's URL: line goes to --url)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *endpoint == "" || *bodyFile == "" {
		return usagef("--endpoint and --body are required")
	}
	body, err := readBody(e, *bodyFile)
	if err != nil {
		return err
	}
	req := &hookverifyv1.VerifyRequest{EndpointId: *endpoint, Body: body, Method: *method, Url: *url}
	for _, h := range headers {
		// `verify -H "$(hookverify sign ...)"` passes every header sign printed, one a line: a
		// line break cannot be part of a header value on the wire, so each line is a header.
		for _, line := range strings.Split(strings.TrimRight(h, "\r\n"), "\n") {
			line = strings.TrimSuffix(line, "\r")
			name, value, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(name) == "" {
				// Only the line at fault is quoted: the others may carry a credential (sign
				// prints GitLab's X-Gitlab-Token, shared-token's header, as they are sent).
				return usagef("-H line %q: want 'Name: value' (one header a line)", line)
			}
			if strings.TrimSpace(name) == "URL" {
				// sign's "URL: ..." line (Mailchimp's credential is in it; Contentful's has the
				// fragment cut) is the URL to call, not a header: sent as one, the delivery
				// was rejected for want of what the URL holds. Not quoted: it may hold the secret.
				return usagef("-H: a URL line is the URL sign says to call, not a header: give it with --url")
			}
			req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: strings.TrimSpace(name), Value: strings.TrimLeft(value, " \t")})
		}
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Verifier.Verify(ctx, req)
	})
}

func readBody(e env, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(path)
}
