package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

func runToken(ctx context.Context, e env, args []string) error {
	return subcommand(ctx, e, "token", args, map[string]func(context.Context, env, []string) error{
		"create": tokenCreate,
		"list":   tokenList,
		"revoke": tokenRevoke,
	})
}

// tokenCreate prints the new token once, in the JSON answer's bearerToken; the server keeps
// only its hash.
func tokenCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "token create")
	var r remoteFlags
	r.register(fs)
	name := fs.String("name", "", "who or what holds the token (required)")
	var scopes multiFlag
	fs.Var(&scopes, "scope", "admin, verify:<endpoint|prefix*|*> or inbox:<endpoint|prefix*|*> (repeatable, at least one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" || len(scopes) == 0 {
		return usagef("--name and at least one --scope are required")
	}
	if discarded(e.stdout) {
		// Checked before the token exists: written there, its secret, shown only once, would be
		// lost, and the token left live with nobody holding it.
		return errors.New("standard output is /dev/null (or was closed, which Go's runtime replaces with /dev/null): the token's secret is shown only once and would be lost, so no token was created; send standard output to a file or a terminal")
	}
	// A broken pipe on standard output would otherwise kill the process in the write, before
	// it could revoke the token it failed to show: caught, the write fails with EPIPE instead.
	brokenPipe := make(chan os.Signal, 1)
	signal.Notify(brokenPipe, syscall.SIGPIPE)
	defer signal.Stop(brokenPipe)
	conn, err := r.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	created, err := conn.Tokens.CreateToken(callCtx, &hookverifyv1.CreateTokenRequest{Name: *name, Scopes: scopes})
	if err != nil {
		if outcomeUnknown(err) {
			// The server may have created the token and lost only its answer: a live token
			// whose secret nobody saw. Its id is unknown here, so the operator is told how to
			// find it.
			return &hintedError{err: err, hint: fmt.Sprintf("the server may still have created a token named %q whose secret nobody saw: look for it with 'hookverify token list' and revoke it with 'hookverify token revoke --id ID' before creating it again", *name)}
		}
		return err
	}
	if err := printJSON(e.stdout, created); err != nil {
		return revokeUnseen(ctx, r.timeout, conn, created.GetToken().GetId(), err)
	}
	return nil
}

// outcomeUnknown reports whether a failed call may still have been carried out by the server:
// its deadline passed or it was cancelled while under way, the connection failed, whose
// UNAVAILABLE gRPC also gives a request the server had already received, or the answer was
// not gRPC's (UNKNOWN: a proxy's error page, say). An error hintInterceptor hinted is a call
// that never reached serve (nothing listening, a name that does not resolve, TLS refused) or
// that serve refused: nothing was carried out, and the hint already says what to fix.
func outcomeUnknown(err error) bool {
	var hinted *hintedError
	if errors.As(err, &hinted) {
		return false
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable, codes.Unknown:
		return true
	}
	return false
}

// discarded reports whether w is the null device: standard output sent to /dev/null, or
// closed when the process started (Go's runtime opens /dev/null in place of a closed standard
// descriptor, so that writes to it succeed).
func discarded(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	got, err := f.Stat()
	if err != nil {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(got, null)
}

// revokeUnseen revokes the token id that token create made but could not print (printErr): the
// server keeps only its hash, so nobody holds it, yet it would stay live, to be found
// in token list as a working credential nobody holds. Run even after an interrupt, since the
// token exists either way.
func revokeUnseen(ctx context.Context, timeout time.Duration, conn *client.Conn, id string, printErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := conn.Tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: id}); err != nil {
		return fmt.Errorf("printing the new token failed (%w), and revoking it failed too (%v): token %s is live and nobody saw its secret; revoke it by hand: hookverify token revoke --id %s", printErr, err, id, id)
	}
	return fmt.Errorf("printing the new token failed (%w): token %s was revoked, since nobody saw its secret; create it again", printErr, id)
}

func tokenList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "token list")
	var r remoteFlags
	r.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Tokens.ListTokens(ctx, &hookverifyv1.ListTokensRequest{})
	})
}

func tokenRevoke(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "token revoke")
	var r remoteFlags
	r.register(fs)
	id := fs.String("id", "", "token id, as token list shows it, or - to read the id or a leaked token itself from standard input (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return usagef("--id is required")
	}
	if *id == "-" {
		// A leaked token is what a secret scanner reports; the server revokes the token it is.
		// Read, not taken as an argument, it stays out of process listings and shell history.
		data, err := io.ReadAll(io.LimitReader(e.stdin, 4<<10))
		if err != nil {
			return fmt.Errorf("reading the token id from standard input: %w", err)
		}
		// Trimmed as readToken trims a token: a Windows editor's byte order mark, kept, would
		// make the token match none, and a leaked token stay valid.
		if *id = strings.TrimSpace(strings.TrimPrefix(string(data), "\ufeff")); *id == "" {
			return usagef("--id -: no token id or token on standard input")
		}
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: *id})
	})
}
